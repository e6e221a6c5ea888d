// Package logstream carries deploy logs from the workers to users: live through
// one Redis stream per run, durably through Postgres log_lines, with every secret masked
// before a line leaves the worker.
//
// # Layout
//
//	Redis     <prefix>:log:<run>   STREAM, one per run; entry fields
//	                               step, job, execution, fd, ts (Unix µs), text
//	                               and a final type=eof, status=<run state>, ts
//	                               XADD MAXLEN ~ Config.MaxLen; EXPIRE Config.MaxAge at first
//	                               write (NX), Config.Retention (or End's) at End
//	          <prefix>:metrics:log_lines  INCRBY with each XADD batch (shared/metrics)
//	Postgres  log_lines            (run_id, stream_ms, stream_seq) primary key, stack_id,
//	                               step_id, job, execution, at, fd, text
//	          log_ends             run_id, stack_id, the eof's id, status, at
//
// A line's id is its stream entry id (rstream.ID, "<ms>-<seq>"): it orders the lines of a run
// across all the writers of that run, it is the SSE event id, and it is the Postgres key, so a
// reader can switch between the two stores without loss or duplicates.
//
// # Writing
//
// A Writer (one per step, or per run) masks each line with the step's secrets.Masker in the
// caller's goroutine, before the line is queued, so no unmasked text is ever in a buffer that
// leaves the process. A flush goroutine sends lines to Redis in pipelined XADD batches
// (Config.FlushInterval after the first line of a batch, or at Config.FlushLines, whichever
// comes first); a copy goroutine stores lines that have their id in log_lines with one COPY
// per batch (Config.CopyInterval or Config.CopyLines). Redis comes first because the id does.
//
// Backpressure, not unbounded buffering: a Writer holds at most Config.BufferBytes of lines
// not yet in Postgres, and Line blocks while it is full. A burst, or a slow Postgres, slows
// the program whose output is being logged (Terraform blocks on its pipe) instead of growing
// the worker's memory. Lines are never dropped to make room: the durable copy must have every
// line the writer accepted. Longer texts than MaxLineBytes are masked whole, then stored as
// several lines.
//
// A writer that dies between the XADD and the COPY (its worker SIGKILLed, or Postgres down
// until then) leaves lines followers saw that log_lines lacks. Client.StoreStreamed copies
// them from the stream — masked already, under their stream ids — and the workers call it
// when a step is taken over after a lost delivery and before End, so the durable log holds
// every line a follower saw, unless Redis lost it first (a crash, or the stream trimmed by
// MaxLen before the copy). It is idempotent and safe beside a still-live writer; a line
// whose XADD outcome its writer never learned is copied only when its fallback twin is not
// stored yet (a stale writer still storing it may then leave it twice).
//
// # When Redis fails
//
// A batch whose XADDs fail still goes to Postgres, with fallback ids made by the writer: the
// millisecond of the writer's last id, and a sequence number with bit 62 set (Redis never
// numbers that high within a millisecond), a random 29-bit writer tag and a counter. They sort
// after the writer's earlier lines; when Redis answers again the writer's next XADD asks for
// a later millisecond ("<ms+1>-*"), so its later lines sort after them too. The writer does
// not retry Redis for Config.RedisRetry after a failure, so a dead Redis slows nothing, and
// its first line after recovery is a notice saying how many lines the live log missed.
// Consequences, by design:
//
//   - log_lines, the download and backfills served from Postgres have every line, in order;
//   - live followers and backfills served from Redis do not see fallback lines: the notice
//     tells them so when Redis answers before the writer's Close, and Hub.Follow's end
//     message counts them (Message.Unstreamed, the SSE end event's unstreamed) in any case,
//     so a follower knows to read the stored log for the complete one; a line whose XADD
//     outcome was unknown (broken connection) may appear both live and, under its fallback
//     id, in Postgres;
//   - Close reports ErrNotStreamed with the count; only ErrNotDurable means lines are lost.
//
// A COPY that fails is retried with backoff, keeping its lines (and so, through the buffer
// bound, blocking Line) until it succeeds or Close's context ends. LogLinesCopy is idempotent,
// so a retry after an unacknowledged commit stores nothing twice.
//
// # Reading
//
// Backfill reads the stream in XRANGE pages after a Last-Event-ID. Each page comes with the
// stream's bounds and counters (XINFO STREAM) in the same MULTI (rstream.ReadPage); when
// entries after the resume id were trimmed, the gap up to the stream's first entry is read
// from log_lines first.
// Trimming does not wait for lines to be stored, so before reading the gap the backfill waits
// (up to Config.StoreWait) until Postgres holds as many streamed lines before the stream's
// first entry as the stream ever had there (XINFO entries-added − length: Horizon never
// XDELs); a reader that far behind a busy run with a short MaxLen would otherwise skip lines
// still on their way to Postgres. Once the stream has expired the whole log comes from
// Postgres, and log_ends says where it ends. Filters (job, execution, step) are
// applied here, never by the client: in SQL for Postgres, after decoding for Redis.
//
// Hub is the API side: one XREAD goroutine per followed run per process, fanning out to every
// follower with a bounded buffer each (rstream.Hub); Follow backfills and then joins it, and
// Subscribe does the same into a channel for an SSE writer. A follower that falls
// rstream.Config.Buffer behind gets a final KindLagging message and is dropped; it resumes by
// id, through backfill. Every follow ends with KindEnd once the eof is read (from Redis or
// log_ends), carrying the count of stored lines matching the filter that the follow could not
// pass (fallback lines, less those it read from Postgres). Download streams a run's or a stack's stored lines as text or NDJSON with keyset
// pages, in constant memory.
//
// End must be called after every Writer of the run is closed; see End for what happens when
// Redis fails then.
package logstream
