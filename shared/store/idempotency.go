package store

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// IdempotencyRecord is a stored Idempotency-Key and, once its first request finished, the
// response to replay. Body is stored as the caller gives it (the API seals it).
type IdempotencyRecord struct {
	RequestHash []byte
	Done        bool
	Status      int
	ContentType string
	Headers     map[string]string
	Body        []byte
	CreatedAt   time.Time
}

// IdempotencyAbandonAfter is how long a key may stay pending before a retry may take it over:
// long enough for any request to have finished (requests have a deadline well below it), short
// enough that a crash between claim and finish does not block the client for long.
const IdempotencyAbandonAfter = 2 * time.Minute

// IdempotencyBegin claims key for a request whose method, path and body hash to hash. It returns
// (nil, nil) when the caller now owns the key and must run the request, or the existing record
// otherwise (the caller compares hashes and replays, refuses or reports "in progress"). A pending
// key older than IdempotencyAbandonAfter is taken over by a request with the same hash.
func IdempotencyBegin(ctx context.Context, q Querier, token uuid.UUID, key, method, path string, hash []byte) (*IdempotencyRecord, error) {
	var claimed bool
	err := q.QueryRow(ctx, `INSERT INTO idempotency_keys (token_id, key, method, path, request_hash)
		VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (token_id, key) DO UPDATE SET created_at = now()
		WHERE idempotency_keys.state = 'pending' AND idempotency_keys.request_hash = EXCLUDED.request_hash
		  AND idempotency_keys.created_at < now() - make_interval(secs => $6)
		RETURNING true`, token, key, method, path, hash, IdempotencyAbandonAfter.Seconds()).Scan(&claimed)
	if err == nil {
		return nil, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return nil, translate(err)
	}
	var r IdempotencyRecord
	var status *int
	var ctype *string
	var state string
	err = q.QueryRow(ctx, `SELECT request_hash, state, status, content_type, COALESCE(headers, '{}'), body, created_at
		FROM idempotency_keys WHERE token_id = $1 AND key = $2`, token, key).
		Scan(&r.RequestHash, &state, &status, &ctype, &r.Headers, &r.Body, &r.CreatedAt)
	if err != nil {
		return nil, translate(err)
	}
	r.Done = state == "done"
	if status != nil {
		r.Status = *status
	}
	if ctype != nil {
		r.ContentType = *ctype
	}
	return &r, nil
}

// IdempotencyFinish stores the response of the request that claimed key.
func IdempotencyFinish(ctx context.Context, q Querier, token uuid.UUID, key string, status int, contentType string, headers map[string]string, body []byte) error {
	_, err := q.Exec(ctx, `UPDATE idempotency_keys SET state = 'done', status = $3, content_type = $4, headers = $5, body = $6
		WHERE token_id = $1 AND key = $2`, token, key, status, contentType, headers, body)
	return translate(err)
}

// IdempotencyRelease forgets a claimed key whose request did not produce a response worth
// replaying (a server error), so that the client's retry runs again.
func IdempotencyRelease(ctx context.Context, q Querier, token uuid.UUID, key string) error {
	_, err := q.Exec(ctx, `DELETE FROM idempotency_keys WHERE token_id = $1 AND key = $2 AND state = 'pending'`, token, key)
	return translate(err)
}

// IdempotencyForget deletes a done key, so that the next request with it runs afresh (its stored
// response can no longer be replayed).
func IdempotencyForget(ctx context.Context, q Querier, token uuid.UUID, key string) error {
	_, err := q.Exec(ctx, `DELETE FROM idempotency_keys WHERE token_id = $1 AND key = $2 AND state = 'done'`, token, key)
	return translate(err)
}

// IdempotencyExpire deletes keys older than age and returns how many.
func IdempotencyExpire(ctx context.Context, q Querier, age time.Duration) (int64, error) {
	tag, err := q.Exec(ctx, `DELETE FROM idempotency_keys WHERE created_at < now() - make_interval(secs => $1)`, age.Seconds())
	return tag.RowsAffected(), translate(err)
}
