-- +goose Up

-- Least-privilege bot tokens: "read" opens the GETs and streams of the user's teams, "deploy"
-- adds deploy, retry, cancel, run again and actions (auth.TokenScope).
ALTER TABLE api_tokens DROP CONSTRAINT api_tokens_scope_check;
ALTER TABLE api_tokens ADD CONSTRAINT api_tokens_scope_check CHECK (scope IN ('full', 'deploy', 'read', 'prometheus'));

-- +goose Down
ALTER TABLE api_tokens DROP CONSTRAINT api_tokens_scope_check;
ALTER TABLE api_tokens ADD CONSTRAINT api_tokens_scope_check CHECK (scope IN ('full', 'prometheus'));
