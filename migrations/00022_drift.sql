-- +goose Up

-- What Horizon set on each machine, recorded after its last successful apply (and after the
-- labels were written as tags): the drift check compares Proxmox with this, never with
-- Terraform's state. config holds only the keys the module set (key → value as PVE stores
-- it); maxmem/maxcpu/maxdisk are what /cluster/resources shows for them, so that a change of
-- memory, cores or the boot disk is seen from the cluster listing without a config read.
-- ctime and uuid (meta and smbios1) tell a VM deleted and recreated under the same VM id.
CREATE TABLE vm_records (
  execution_id   uuid PRIMARY KEY REFERENCES executions (id) ON DELETE CASCADE,
  stack_id       uuid NOT NULL REFERENCES stacks (id) ON DELETE CASCADE,
  server_id      uuid NOT NULL REFERENCES proxmox_servers (id) ON DELETE CASCADE,
  vmid           int NOT NULL,
  node           text NOT NULL,
  name           text NOT NULL,
  tags           text[] NOT NULL DEFAULT '{}',
  pool           text NOT NULL DEFAULT '',
  status         text NOT NULL,
  config         jsonb NOT NULL DEFAULT '{}',
  ctime          bigint,
  uuid           text NOT NULL DEFAULT '',
  digest         text NOT NULL,
  maxmem         bigint NOT NULL DEFAULT 0,
  maxcpu         int NOT NULL DEFAULT 0,
  maxdisk        bigint NOT NULL DEFAULT 0,
  recorded_at    timestamptz NOT NULL DEFAULT now(),
  -- The last config read by a check, and its digest: the rolling sweep reads the oldest first.
  config_read_at timestamptz NOT NULL DEFAULT now(),
  seen_digest    text NOT NULL DEFAULT ''
);
CREATE INDEX vm_records_server_idx ON vm_records (server_id, config_read_at);
CREATE INDEX vm_records_stack_idx ON vm_records (stack_id);

-- One row per property of a machine that differs from what Horizon set (CloudFormation's
-- property differences). path "" is the machine as a whole (missing, replaced). An accepted
-- finding keeps its row with the accepted value: while Proxmox shows that value it does not
-- count as drift; another value raises it again.
CREATE TABLE drift_findings (
  id              uuid PRIMARY KEY DEFAULT uuid_v7(),
  stack_id        uuid NOT NULL REFERENCES stacks (id) ON DELETE CASCADE,
  execution_id    uuid NOT NULL REFERENCES executions (id) ON DELETE CASCADE,
  path            text NOT NULL,
  kind            text NOT NULL CHECK (kind IN ('missing', 'moved', 'stopped', 'changed', 'added', 'removed', 'replaced')),
  expected        jsonb,
  actual          jsonb,
  since           timestamptz NOT NULL,
  changed_by      text,
  changed_at      timestamptz,
  last_seen_at    timestamptz NOT NULL,
  accepted_by     uuid REFERENCES users (id) ON DELETE SET NULL,
  accepted_at     timestamptz,
  accepted_reason text,
  accepted_value  jsonb,
  version         bigint NOT NULL DEFAULT 1,
  CONSTRAINT drift_findings_path_key UNIQUE (execution_id, path)
);
CREATE INDEX drift_findings_stack_idx ON drift_findings (stack_id);

-- When the stack's machines were last compared with Proxmox, and whether the last drift event
-- announced it drifted (found) or not (cleared): events are published when that changes, by
-- a check, or by an accept that leaves nothing unaccepted. A re-apply that fixes everything is
-- announced by the next check.
ALTER TABLE stacks ADD COLUMN drift_checked_at timestamptz;
ALTER TABLE stacks ADD COLUMN drift_announced boolean NOT NULL DEFAULT false;

-- One row per Proxmox server: the check running on it (a claim that expires, so a crashed
-- worker does not block the next check), the last outcome, and the start of the last
-- successful check (the task log is read from there on).
CREATE TABLE drift_checks (
  server_id     uuid PRIMARY KEY REFERENCES proxmox_servers (id) ON DELETE CASCADE,
  running_since timestamptz,
  claim         uuid,
  checked_at    timestamptz,
  failed_at     timestamptz,
  error         text,
  tasks_since   timestamptz
);

-- +goose Down
DROP TABLE drift_checks;
ALTER TABLE stacks DROP COLUMN drift_announced;
ALTER TABLE stacks DROP COLUMN drift_checked_at;
DROP TABLE drift_findings;
DROP TABLE vm_records;
