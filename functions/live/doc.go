// Package live serves live tracking: GET /v1/events, the Server-Sent Events stream
// of every change of the stacks, runs, steps (and ISOs) the caller may see, and
// POST /v1/stream-tokens, which mints the short-lived tokens browsers pass in ?stream_token=
// because EventSource cannot send an Authorization header. The deploy log's own stream is in
// functions/logs; the SSE plumbing (heartbeats, write deadlines, shutdown) in functions/stream.
//
// Decisions:
//
//   - The SSE id of every event is its id in the Redis events stream ("<ms>-<seq>"). A client
//     that reconnects with Last-Event-ID (or ?last_event_id=, for an EventSource rebuilt with a
//     new stream token, which cannot send the header) gets exactly the events after it while
//     they are within HORIZON_EVENTS_MAXLEN; beyond that, a "reset" event says to reload
//     (events.Hub). Without an id the stream starts with the events published from now on.
//   - What a caller sees is filtered on the server, per event, by team: their teams' stacks,
//     runs and steps, every team's for admins; ISO events (catalogue objects) for everyone.
//     ?stack= narrows to one stack the caller may see (404 otherwise) and leaves ISOs out.
//     The principal is the one at connection time: a membership change applies at the next
//     connection.
//   - Event names: "event" (data: the events.Event JSON), "reset" and "lagging" (data:
//     {"id": …}, the id to resume from, which is also their SSE id). A client that falls more
//     than HORIZON_SSE_BUFFER behind gets "lagging" and the stream ends; EventSource
//     reconnects by itself with that id.
//   - Stream tokens are stateless HMAC tokens (auth.StreamSigner), one purpose each (events,
//     or one stack's logs), at most five minutes, acting as the API token that minted them
//     (see middleware.StreamAuth). Viewers may mint them: they only read.
package live
