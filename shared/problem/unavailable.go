package problem

import (
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/redis/go-redis/v9"
)

// retryAfter is the Retry-After (seconds) of a 503: long enough for a restarting Postgres or
// Redis, short enough for a chat-ops bot to try again while its user waits.
const retryAfter = "5"

// dependencyDown reports whether err says that a dependency (Postgres, Redis, a Proxmox
// cluster) could not be reached or dropped the connection: something a later retry may fix,
// which the client is told with a 503, not a bug (500) nor its own mistake (4xx).
func dependencyDown(err error) bool {
	var connect *pgconn.ConnectError
	var pg *pgconn.PgError
	var network net.Error
	switch {
	case errors.As(err, &connect):
		return true
	case errors.As(err, &pg):
		// 08: connection exception; 57P01-03: the server is shutting down or starting; 53300:
		// too many connections; 25006: a write reached a server that is read only, a primary
		// being switched over (the store resets its pool on it, so a retry reaches the new one).
		return strings.HasPrefix(pg.Code, "08") || strings.HasPrefix(pg.Code, "57P") || pg.Code == "53300" || pg.Code == "25006"
	case redis.IsReadOnlyError(err), redis.IsMasterDownError(err), redis.IsNoReplicasError(err), redis.IsLoadingError(err),
		redis.IsTryAgainError(err), redis.IsClusterDownError(err):
		// A Redis failover in progress: the client reached a replica, a master without its
		// replicas (min-replicas-to-write), or a server loading its data.
		return true
	case errors.Is(err, pgconn.ErrConnClosed), errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, redis.ErrPoolTimeout), errors.Is(err, redis.ErrClosed):
		return true
	case errors.As(err, &network):
		return true
	}
	return pgconn.SafeToRetry(err)
}
