-- +goose Up

-- A Proxmox VE cluster's API endpoint and what Horizon discovered through it. Secrets (the API
-- token's secret, the SSH private key for the nodes) are AES-GCM ciphertexts (shared/secrets).
CREATE TABLE proxmox_servers (
  id              uuid PRIMARY KEY DEFAULT uuid_v7(),
  name            text NOT NULL,
  api_url         text NOT NULL,
  token_id        text NOT NULL,
  token_secret    bytea NOT NULL,
  tls_fingerprint text NOT NULL DEFAULT '',
  ca_cert         text NOT NULL DEFAULT '',
  ssh_user        text NOT NULL,
  ssh_private_key bytea NOT NULL,
  ssh_public_key  text NOT NULL,
  pve_version     text NOT NULL DEFAULT '',
  cluster_name    text NOT NULL DEFAULT '',
  refreshed_at    timestamptz NOT NULL DEFAULT now(),
  version         bigint NOT NULL DEFAULT 1,
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT proxmox_servers_name_key UNIQUE (name),
  CHECK (tls_fingerprint <> '' OR ca_cert <> '')
);

-- Cluster members. The SSH endpoint and its pinned host key are the admin's; online state and
-- sizes are refreshed from the API.
CREATE TABLE proxmox_nodes (
  server_id       uuid NOT NULL REFERENCES proxmox_servers (id) ON DELETE CASCADE,
  name            text NOT NULL,
  online          bool NOT NULL,
  cpus            int NOT NULL DEFAULT 0,
  memory          bigint NOT NULL DEFAULT 0,
  ssh_address     text,
  ssh_host_key    text, -- "SHA256:…" fingerprint
  host_key_source text CHECK (host_key_source IN ('pinned', 'trust_on_first_use')),
  PRIMARY KEY (server_id, name),
  CHECK ((ssh_address IS NULL) = (ssh_host_key IS NULL))
);

CREATE TABLE proxmox_storages (
  server_id uuid NOT NULL REFERENCES proxmox_servers (id) ON DELETE CASCADE,
  name      text NOT NULL,
  type      text NOT NULL,
  content   text[] NOT NULL DEFAULT '{}',
  shared    bool NOT NULL,
  path      text NOT NULL DEFAULT '',
  nodes     text[] NOT NULL DEFAULT '{}', -- where the storage is active
  PRIMARY KEY (server_id, name)
);

CREATE TABLE proxmox_pools (
  server_id uuid NOT NULL REFERENCES proxmox_servers (id) ON DELETE CASCADE,
  pool      text NOT NULL,
  comment   text NOT NULL DEFAULT '',
  PRIMARY KEY (server_id, pool)
);

-- Image files found on the cluster's iso storages (not the builds Horizon makes: see isos).
CREATE TABLE proxmox_iso_files (
  server_id uuid NOT NULL REFERENCES proxmox_servers (id) ON DELETE CASCADE,
  volid     text NOT NULL,
  storage   text NOT NULL,
  size      bigint NOT NULL DEFAULT 0,
  nodes     text[] NOT NULL DEFAULT '{}',
  PRIMARY KEY (server_id, volid, nodes)
);

CREATE TABLE environment_proxmox_servers (
  environment_id uuid NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
  server_id      uuid NOT NULL REFERENCES proxmox_servers (id) ON DELETE RESTRICT,
  PRIMARY KEY (environment_id, server_id)
);

ALTER TABLE environments ADD COLUMN nagios_server_id uuid REFERENCES nagios_servers (id) ON DELETE RESTRICT;

-- +goose Down
ALTER TABLE environments DROP COLUMN nagios_server_id;
DROP TABLE environment_proxmox_servers, proxmox_iso_files, proxmox_pools, proxmox_storages, proxmox_nodes, proxmox_servers;
