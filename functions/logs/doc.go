// Package logs serves a stack's deploy logs: GET /v1/stacks/{id}/logs downloads
// them and GET /v1/stacks/{id}/logs/stream follows them live as Server-Sent Events. Both take
// the filters ?job=, ?execution= and ?run=, applied on the server (in SQL for Postgres, after
// decoding for Redis; shared/logstream).
//
// Decisions:
//
//   - The download reads Postgres only (log_lines, the durable copy), a keyset page at a time
//     (logstream.Download), so its memory does not depend on the log's size and a slow client
//     holds no database connection. Text by default, NDJSON for Accept: application/x-ndjson.
//     Without ?run= it is every run of the stack, oldest first. A download that fails half-way
//     ends with the connection closed before the final chunk, so it cannot pass for complete.
//     A line is in the download once its writer stored it (within 250 ms, CopyInterval).
//   - The stream is of one run: ?run=, or else the stack's latest. It sends the run's lines so
//     far (backfill), then live ones, then an "end" event when the run ends, and closes. With
//     ?follow=true it goes on: a "run" event announces the stack's next run when it is created
//     and its lines follow; without any run yet, it waits for the first.
//   - SSE ids are "<run>/<stream id>" ("<run>/<ms>-<seq>"): the stream id orders a run's lines
//     and is the key of both stores, and the run says which log it is in, so that a follower
//     that moved on to a later run resumes in that run after a reconnect. Last-Event-ID (or
//     ?last_event_id=) resumes exactly after it, with no line lost or repeated, for as long as
//     the lines are stored (the stack exists): trimmed or expired parts of the Redis stream are
//     read from Postgres. Reconnecting after the end of a run that is not followed answers 204,
//     which tells EventSource to stop reconnecting.
//   - Event names: "line" (data: the logstream.Line JSON), "end" ({"run", "status",
//     "unstreamed"}), "run" ({"run"}; its id "<run>/0-0" resumes at the start of that run),
//     and "lagging" ({"id"}): a client more than HORIZON_SSE_BUFFER behind gets it as the last
//     event and must resume from that id, which EventSource does by itself. unstreamed above 0
//     counts stored lines of the filter the stream could not send (written while Redis was
//     down; logstream.Message): the client reads the download for the complete log.
//   - Each run being followed costs one Redis reader per API process, whatever the number of
//     clients (logstream.Hub); a client costs a bounded buffer, nothing per line.
package logs
