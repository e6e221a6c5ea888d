-- +goose Up

-- Least-privilege bot tokens: "read" opens the GETs and streams of the user's teams, "deploy"
-- adds deploy, retry, cancel, run again and actions (auth.TokenScope).
ALTER TABLE api_tokens DROP CONSTRAINT api_tokens_scope_check;
ALTER TABLE api_tokens ADD CONSTRAINT api_tokens_scope_check CHECK (scope IN ('full', 'deploy', 'read', 'prometheus'));

-- Webhook subscriptions: a team's (members manage them) or, with no team, global (admins).
-- The URL is sealed (a Slack or Mattermost URL is itself the credential) and so is the signing
-- secret; the previous secret keeps signing until previous_secret_until (rotation).
CREATE TABLE webhooks (
  id                    uuid PRIMARY KEY DEFAULT uuid_v7(),
  team_id               uuid REFERENCES teams (id) ON DELETE CASCADE,
  name                  text NOT NULL,
  kind                  text NOT NULL CHECK (kind IN ('standard', 'slack', 'mattermost')),
  url_sealed            bytea NOT NULL,
  url_shown             text NOT NULL,
  events                text[] NOT NULL,
  enabled               boolean NOT NULL DEFAULT false,
  disabled_reason       text,
  secret_sealed         bytea NOT NULL,
  previous_secret_sealed bytea,
  previous_secret_until timestamptz,
  version               bigint NOT NULL DEFAULT 1,
  created_at            timestamptz NOT NULL DEFAULT now(),
  updated_at            timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX webhooks_name_key ON webhooks (COALESCE(team_id, '00000000-0000-0000-0000-000000000000'), name);
CREATE INDEX webhooks_enabled_idx ON webhooks (team_id) WHERE enabled;

-- The outbox: one row per event, written in the transaction of the change it reports. Data is
-- the thin payload (ids, names, states, the first error line, who and when).
CREATE TABLE webhook_events (
  id         uuid PRIMARY KEY DEFAULT uuid_v7(),
  team_id    uuid,
  type       text NOT NULL,
  data       jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

-- One delivery per (subscription, event): its state, the attempts made, when the next is due,
-- and what the last attempt got (the delivery log). A test message has no event row.
CREATE TABLE webhook_deliveries (
  id            uuid PRIMARY KEY DEFAULT uuid_v7(),
  webhook_id    uuid NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
  event_id      uuid REFERENCES webhook_events (id) ON DELETE CASCADE,
  event_type    text NOT NULL,
  state         text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
  attempts      int NOT NULL DEFAULT 0,
  next_at       timestamptz NOT NULL DEFAULT now(),
  last_status   int,
  last_latency_ms int,
  last_response text,
  last_error    text,
  last_at       timestamptz,
  -- Set by the dispatch sweep when it queues an attempt: until then no other sweep queues it;
  -- after it (the task was lost with its worker) the next sweep does.
  claimed_until timestamptz,
  created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_at) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_webhook_idx ON webhook_deliveries (webhook_id, id);

-- +goose Down
DROP TABLE webhook_deliveries;
DROP TABLE webhook_events;
DROP TABLE webhooks;
-- The schema before knows no scope between prometheus and full: keeping a read or deploy token
-- would widen it to everything its user may do, so it is revoked (its bot needs a new token).
DELETE FROM api_tokens WHERE scope IN ('read', 'deploy');
ALTER TABLE api_tokens DROP CONSTRAINT api_tokens_scope_check;
ALTER TABLE api_tokens ADD CONSTRAINT api_tokens_scope_check CHECK (scope IN ('full', 'prometheus'));
