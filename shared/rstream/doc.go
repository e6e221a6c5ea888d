// Package rstream is the Redis streams plumbing that the deploy logs (logstream) and the
// state-change events (events) share: stream ids (ID, which are also the SSE event ids), an
// atomic page read that says whether entries were trimmed (ReadPage), and the in-process
// fan-out Hub that the API's two SSE endpoints read through.
//
// # One reader per stream per process
//
// Every client blocked in XREAD on a stream makes every XADD to it pay O(clients) to serve
// them (Redis serves blocked readers of a key one by one on every write to it), and every
// blocked XREAD holds a pool connection.
// So a Hub runs exactly one reader goroutine per stream that has members, whatever their
// number, and fans each batch out in memory. Entries are decoded once and shared read-only.
// The reader starts with the first Join and stops within Config.Block of the last Leave.
// Streams are read one key per XREAD (never several keys in one command) so that the Hub
// works on Redis Cluster too.
//
// # Joining without loss or duplicates
//
// A subscriber backfills on its own (XRANGE pages, at its own pace: a slow one pages slowly)
// and then joins at the last id it has. The reader's position at that moment may be behind
// (the member skips what it already has, by id) or ahead (Join reads the gap itself and queues
// it before anything the reader pushes later). Either way Next returns every later entry
// exactly once, in order.
//
// # Bounded memory and lagging
//
// A member's queue is bounded in bytes (Config.Buffer, plus one batch for a member that had
// taken everything, so that a large XREAD never drops one that keeps up). A member that would
// exceed it is dropped at once: its queue is released, it is removed from the stream, and its Next returns
// ErrLagging. It must resume by id, which goes through backfill again. The server never
// buffers without bound for a slow or paused reader; what a stalled member can pin is its
// Buffer plus the batch its consumer holds.
//
// # Trimming
//
// Trimming (XADD MAXLEN ~) removes the oldest entries. Horizon never XDELs, so a stream whose
// XINFO entries-added (Redis ≥ 7.0) exceeds its length has lost exactly the entries before its
// first one. (max-deleted-entry-id would be more precise, but Redis 7.0 updates it for XDEL
// only, not for trimming.) ReadPage reports this with each page, atomically; the reader checks
// it whenever an XREAD comes back full (the only case in which it can have fallen behind a
// trim), and drops every member as lagging if something it had not read may have gone. What to do about a trimmed gap is the caller's
// business: logstream fills it from Postgres, events tells the client to reload.
//
// # Redis failures
//
// A reader whose XREAD fails retries with backoff (50 ms doubling to 2 s) from the same id;
// its members wait, and get everything once Redis answers again.
package rstream
