-- +goose Up

-- Idempotent responses are now stored sealed (functions/middleware). The answers stored before
-- were in clear, and some carry a secret once (a minted token, a webhook's signing secret):
-- forget them now instead of keeping them for the rest of their 24 h. A retry with one of these
-- keys runs its request again, as it would once the key expired.
DELETE FROM idempotency_keys WHERE state = 'done';

-- +goose Down
-- Nothing to undo: the deleted answers cannot come back, and sealed ones that an older version
-- cannot open are replayed by it as they are — so roll back only with the table emptied.
DELETE FROM idempotency_keys WHERE state = 'done';
