-- +goose Up

-- Time-ordered UUIDs (version 7): ids sort by creation, so keyset pagination can page on the id
-- alone and inserts stay at the right edge of every primary-key index.
-- +goose StatementBegin
CREATE FUNCTION uuid_v7() RETURNS uuid AS $$
  SELECT encode(
    set_bit(set_bit(
      overlay(uuid_send(gen_random_uuid())
              PLACING substring(int8send(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3)
              FROM 1 FOR 6),
      52, 1), 53, 1),
    'hex')::uuid
$$ LANGUAGE sql VOLATILE;
-- +goose StatementEnd

CREATE TABLE teams (
  id         uuid PRIMARY KEY DEFAULT uuid_v7(),
  name       text NOT NULL,
  version    bigint NOT NULL DEFAULT 1,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT teams_name_key UNIQUE (name)
);

CREATE TABLE users (
  id         uuid PRIMARY KEY DEFAULT uuid_v7(),
  name       text NOT NULL,
  email      text NOT NULL,
  role       text NOT NULL CHECK (role IN ('admin', 'member', 'viewer')),
  version    bigint NOT NULL DEFAULT 1,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX users_email_key ON users (lower(email));

CREATE TABLE memberships (
  user_id    uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  team_id    uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (user_id, team_id)
);
CREATE INDEX memberships_team_idx ON memberships (team_id);

-- Only the SHA-256 of a token is stored; the token itself is shown once, when minted.
CREATE TABLE api_tokens (
  id           uuid PRIMARY KEY DEFAULT uuid_v7(),
  user_id      uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  name         text NOT NULL,
  hash         bytea NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  last_used_at timestamptz,
  revoked_at   timestamptz,
  CONSTRAINT api_tokens_hash_key UNIQUE (hash)
);
CREATE INDEX api_tokens_user_idx ON api_tokens (user_id, id);

-- Idempotency keys are scoped per token and kept 24 h (the reconciler deletes older ones). A row
-- is 'pending' while its first request runs; done rows replay the stored response.
CREATE TABLE idempotency_keys (
  token_id     uuid NOT NULL REFERENCES api_tokens (id) ON DELETE CASCADE,
  key          text NOT NULL,
  method       text NOT NULL,
  path         text NOT NULL,
  request_hash bytea NOT NULL,
  state        text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'done')),
  status       int,
  content_type text,
  body         bytea,
  headers      jsonb,
  created_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (token_id, key)
);
CREATE INDEX idempotency_keys_created_idx ON idempotency_keys (created_at);

CREATE TABLE networks (
  id         uuid PRIMARY KEY DEFAULT uuid_v7(),
  name       text NOT NULL,
  cidr       cidr NOT NULL,
  gateway    inet NOT NULL,
  dns        inet[] NOT NULL DEFAULT '{}',
  bridge     text NOT NULL DEFAULT '',
  vlan       int CHECK (vlan BETWEEN 1 AND 4094),
  version    bigint NOT NULL DEFAULT 1,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT networks_name_key UNIQUE (name)
);

CREATE TABLE addresses (
  id         uuid PRIMARY KEY DEFAULT uuid_v7(),
  network_id uuid NOT NULL REFERENCES networks (id) ON DELETE RESTRICT,
  name       text NOT NULL,
  ip         inet NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT addresses_name_key UNIQUE (network_id, name),
  CONSTRAINT addresses_ip_key UNIQUE (network_id, ip)
);

-- An address is attached to at most one execution: the primary key makes a second, concurrent
-- attach fail instead of relying on a read-then-write. No row means the address is free.
CREATE TABLE address_attachments (
  address_id   uuid PRIMARY KEY REFERENCES addresses (id) ON DELETE RESTRICT,
  execution_id uuid NOT NULL,
  attached_at  timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT address_attachments_execution_key UNIQUE (execution_id)
);

CREATE TABLE environments (
  id          uuid PRIMARY KEY DEFAULT uuid_v7(),
  name        text NOT NULL,
  description text NOT NULL DEFAULT '',
  version     bigint NOT NULL DEFAULT 1,
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT environments_name_key UNIQUE (name)
);

CREATE TABLE environment_networks (
  environment_id uuid NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
  network_id     uuid NOT NULL REFERENCES networks (id) ON DELETE RESTRICT,
  PRIMARY KEY (environment_id, network_id)
);

CREATE TABLE ssh_keys (
  id          uuid PRIMARY KEY DEFAULT uuid_v7(),
  user_id     uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  name        text NOT NULL,
  public_key  text NOT NULL,
  key_type    text NOT NULL,
  bits        int NOT NULL,
  fingerprint text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT ssh_keys_name_key UNIQUE (user_id, name),
  CONSTRAINT ssh_keys_fingerprint_key UNIQUE (user_id, fingerprint)
);

CREATE TABLE nagios_servers (
  id         uuid PRIMARY KEY DEFAULT uuid_v7(),
  name       text NOT NULL,
  url        text NOT NULL,
  username   text NOT NULL,
  password   bytea NOT NULL, -- AES-GCM ciphertext (shared/secrets)
  version    bigint NOT NULL DEFAULT 1,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT nagios_servers_name_key UNIQUE (name)
);

-- The audit trail of every write. It references nothing, so it outlives what it describes.
CREATE TABLE activity (
  id          uuid PRIMARY KEY DEFAULT uuid_v7(),
  at          timestamptz NOT NULL DEFAULT now(),
  actor_id    uuid,
  action      text NOT NULL,
  object_type text NOT NULL,
  object_id   uuid,
  team_id     uuid,
  details     jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX activity_object_idx ON activity (object_type, object_id, id);

-- +goose Down
DROP TABLE activity, nagios_servers, ssh_keys, environment_networks, environments,
  address_attachments, addresses, networks, idempotency_keys, api_tokens, memberships, users, teams;
DROP FUNCTION uuid_v7();
