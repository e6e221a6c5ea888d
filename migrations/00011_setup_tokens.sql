-- +goose Up

-- One-time tokens that make the first admin of an installation that has none (POST /v1/setup).
-- Only their SHA-256 is kept; they are deleted when the first admin is made.
CREATE TABLE setup_tokens (
  hash       bytea PRIMARY KEY,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL
);

-- +goose Down
DROP TABLE setup_tokens;
