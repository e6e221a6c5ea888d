// Package middleware holds the handlers that run around every endpoint, in the order the app
// installs them: request id, recovery, access log and metrics, request deadline, CORS,
// authentication, per-token rate limit, and Idempotency-Key handling for POSTs and DELETEs.
//
// The two event streams authenticate with StreamAuth instead of Auth: a bearer token as
// everywhere, or a stream token in ?stream_token= (EventSource cannot send headers). Auth
// refuses a stream token, so it opens nothing else.
package middleware
