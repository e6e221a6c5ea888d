-- +goose Up

-- One-time sign-in codes: a link that signs a browser in (`go tool task up` prints one) carries
-- a short-lived code, never an API token, since the link lands in the browser's history. The
-- console exchanges the code (POST /v1/sign-in) for the API token that minted it. Only the
-- code's SHA-256 is kept; the token is sealed under HORIZON_SECRET_KEY, bound to the code's
-- hash. A code is deleted when used, and expired ones when the next one is minted.
CREATE TABLE sign_in_codes (
  hash         bytea PRIMARY KEY,
  token_id     uuid NOT NULL REFERENCES api_tokens (id) ON DELETE CASCADE,
  sealed_token bytea NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  expires_at   timestamptz NOT NULL
);
CREATE INDEX sign_in_codes_expires_idx ON sign_in_codes (expires_at);

-- +goose Down
DROP TABLE sign_in_codes;
