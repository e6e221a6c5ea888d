// Package middleware holds the handlers that run around every endpoint, in the order the app
// installs them: request id, recovery, access log and metrics, request deadline, CORS,
// authentication, per-token rate limit, and Idempotency-Key handling for POSTs.
package middleware
