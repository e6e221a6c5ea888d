// Package events publishes state changes of stacks, runs, steps and ISOs to one global Redis
// stream, and follows it for the API's GET /v1/events.
//
//	<prefix>:events   STREAM, XADD MAXLEN ~ Config.MaxLen (default 10 000); one field per
//	                  entry, "event", holding the Event's JSON; no expiry
//
// Workers and the API call Publisher.Publish after the Postgres commit that made the change.
// Events are notifications, not the truth: a Publish that fails loses that event, and a client
// that reconnects beyond the stream's retention gets an explicit reset and reloads from the
// API. The entry id is the SSE id.
//
// Events carry no secrets, and the type makes sure of it: Event has ids, state names and
// template identifiers (validated by Publish), and one text field, Error, of type ErrorLine,
// which only MaskError makes — the caller passes the step's Masker, and only the first line,
// cut to MaxErrorLine bytes after masking, is kept. Nothing here masks anything else.
//
// Hub follows the stream with one reader goroutine per process (rstream.Hub) and gives each
// follower its own filter, run in the follower's goroutine over events decoded once. Resume
// by id is exact within retention; otherwise KindReset says to reload, and the stream goes on
// from there. A follower that falls rstream.Config.Buffer behind gets KindLagging and is
// dropped.
package events
