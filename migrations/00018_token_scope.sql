-- +goose Up

-- What an API token may call: "full" acts as its user everywhere; "prometheus" reads only the
-- Prometheus targets (GET /v1/prometheus/targets), so the credential a Prometheus server keeps
-- on disk cannot change or read anything else.
ALTER TABLE api_tokens ADD COLUMN scope text NOT NULL DEFAULT 'full' CHECK (scope IN ('full', 'prometheus'));

-- +goose Down
-- Without the column every token acts as its user everywhere: a prometheus token is revoked
-- rather than widened.
DELETE FROM api_tokens WHERE scope <> 'full';
ALTER TABLE api_tokens DROP COLUMN scope;
