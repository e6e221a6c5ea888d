-- +goose Up

-- A stack: VMs built from a pinned template version, owned by a team.
CREATE TABLE stacks (
  id                  uuid PRIMARY KEY DEFAULT uuid_v7(),
  team_id             uuid NOT NULL REFERENCES teams (id) ON DELETE RESTRICT,
  name                text NOT NULL,
  description         text NOT NULL DEFAULT '',
  labels              text[] NOT NULL DEFAULT '{}',
  environment_id      uuid NOT NULL REFERENCES environments (id) ON DELETE RESTRICT,
  template_id         uuid NOT NULL,
  template_version    int NOT NULL,
  state               text NOT NULL DEFAULT 'draft'
                      CHECK (state IN ('draft', 'deploying', 'deployed', 'updating', 'failed', 'removing', 'removed')),
  -- Set by the first deploy: the environment cannot change afterwards.
  deployed_at         timestamptz,
  version             bigint NOT NULL DEFAULT 1,
  created_by          uuid,
  created_at          timestamptz NOT NULL DEFAULT now(),
  updated_at          timestamptz NOT NULL DEFAULT now(),
  FOREIGN KEY (template_id, template_version) REFERENCES template_versions (template_id, number) ON DELETE RESTRICT
);
CREATE UNIQUE INDEX stacks_name_key ON stacks (team_id, name) WHERE state <> 'removed';
CREATE INDEX stacks_team_idx ON stacks (team_id, id);
CREATE INDEX stacks_state_idx ON stacks (state, id);
CREATE INDEX stacks_template_idx ON stacks (template_id, template_version);

-- One execution per VM (or per run of a non-machine job) of a job of a stack. config holds the
-- user's answers (non-secret parameters and attachments); secrets are sealed columns.
CREATE TABLE executions (
  id                   uuid PRIMARY KEY DEFAULT uuid_v7(),
  stack_id             uuid NOT NULL REFERENCES stacks (id) ON DELETE CASCADE,
  job                  text NOT NULL,
  index                int NOT NULL CHECK (index >= 0),
  config               jsonb NOT NULL DEFAULT '{}',
  secret_parameters    bytea,
  commit               text NOT NULL,
  -- What the last successful apply applied: a hash of the effective answers, and the inputs.
  applied_hash         text,
  outputs              jsonb NOT NULL DEFAULT '{}',
  secret_outputs       bytea,
  server_id            uuid REFERENCES proxmox_servers (id) ON DELETE RESTRICT,
  node                 text,
  vmid                 int,
  host_key             bytea,
  host_key_fingerprint text,
  -- removing: its destroy is planned; removed: destroyed (kept for the history).
  state                text NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'removing', 'removed')),
  created_at           timestamptz NOT NULL DEFAULT now(),
  updated_at           timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX executions_index_key ON executions (stack_id, job, index) WHERE state <> 'removed';
CREATE INDEX executions_stack_idx ON executions (stack_id, job, index);

ALTER TABLE address_attachments
  ADD CONSTRAINT address_attachments_execution_fkey FOREIGN KEY (execution_id) REFERENCES executions (id) ON DELETE CASCADE;

-- Proxmox VM ids are allocated by Horizon, unique per cluster (PVE's /cluster/nextid reserves
-- nothing), and stay with their execution across re-applies and retries.
CREATE TABLE vm_ids (
  server_id    uuid NOT NULL REFERENCES proxmox_servers (id) ON DELETE CASCADE,
  vmid         int NOT NULL CHECK (vmid BETWEEN 100 AND 999999999),
  execution_id uuid NOT NULL REFERENCES executions (id) ON DELETE CASCADE,
  PRIMARY KEY (server_id, vmid),
  CONSTRAINT vm_ids_execution_key UNIQUE (execution_id)
);

-- A run is one unit of user intent (deploy, retry, remove …); steps are its units of work.
CREATE TABLE runs (
  id          uuid PRIMARY KEY DEFAULT uuid_v7(),
  stack_id    uuid REFERENCES stacks (id) ON DELETE CASCADE,
  kind        text NOT NULL CHECK (kind IN ('deploy', 'reapply', 'retry', 'run_again', 'upgrade', 'remove', 'action', 'iso_build')),
  state       text NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'running', 'canceling', 'succeeded', 'failed', 'canceled')),
  actor_id    uuid,
  error       text,
  created_at  timestamptz NOT NULL DEFAULT now(),
  started_at  timestamptz,
  finished_at timestamptz
);
-- At most one run in progress per stack: two concurrent deploys cannot both start one.
CREATE UNIQUE INDEX runs_one_active_key ON runs (stack_id) WHERE state IN ('queued', 'running', 'canceling');
-- The reconciler scans only runs in progress, however many finished runs there are.
CREATE INDEX runs_active_idx ON runs (created_at) WHERE state IN ('queued', 'running', 'canceling');
CREATE INDEX runs_stack_idx ON runs (stack_id, id);

CREATE TABLE steps (
  id              uuid PRIMARY KEY DEFAULT uuid_v7(),
  run_id          uuid NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  position        int NOT NULL,
  phase           int NOT NULL,
  phase_name      text NOT NULL,
  job             text NOT NULL DEFAULT '',
  execution_id    uuid REFERENCES executions (id) ON DELETE SET NULL,
  execution_index int,
  kind            text NOT NULL CHECK (kind IN ('apply', 'destroy', 'nagios_publish', 'nagios_unpublish')),
  state           text NOT NULL DEFAULT 'pending'
                  CHECK (state IN ('pending', 'queued', 'running', 'succeeded', 'failed', 'held', 'canceled', 'skipped')),
  -- attempt fences every write of a step: a superseded attempt's writes match no row.
  attempt         int NOT NULL DEFAULT 0,
  server_id       uuid,
  node            text,
  -- The node gate's fencing token of the attempt that built the machine.
  fence           bigint,
  reason          text,
  error           text,
  ready_at        timestamptz,
  started_at      timestamptz,
  finished_at     timestamptz,
  heartbeat_at    timestamptz,
  gate_wait_ms    bigint NOT NULL DEFAULT 0,
  CONSTRAINT steps_position_key UNIQUE (run_id, position)
);
CREATE INDEX steps_active_idx ON steps (heartbeat_at) WHERE state IN ('queued', 'running');
CREATE INDEX steps_execution_idx ON steps (execution_id);

-- Every state change of a stack: who, when, and the error if any.
CREATE TABLE state_history (
  id         uuid PRIMARY KEY DEFAULT uuid_v7(),
  stack_id   uuid NOT NULL REFERENCES stacks (id) ON DELETE CASCADE,
  run_id     uuid,
  from_state text,
  to_state   text NOT NULL,
  actor_id   uuid,
  error      text,
  at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX state_history_stack_idx ON state_history (stack_id, id);

-- Horizon's own SSH key pair: installed on every VM it builds (cloud-init) to run scripts.
CREATE TABLE deploy_keys (
  id          int PRIMARY KEY CHECK (id = 1),
  private_key bytea NOT NULL,
  public_key  text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE deploy_keys, state_history, steps, runs, vm_ids;
ALTER TABLE address_attachments DROP CONSTRAINT address_attachments_execution_fkey;
DROP TABLE executions, stacks;
