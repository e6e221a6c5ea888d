-- +goose Up

-- An ISO template is a catalogue entry ISOs are built from: a kind (an installer image, or the
-- cloud-image pipeline) and numbered immutable versions, like templates.
CREATE TABLE iso_templates (
  id             uuid PRIMARY KEY DEFAULT uuid_v7(),
  name           text NOT NULL,
  description    text NOT NULL DEFAULT '',
  kind           text NOT NULL CHECK (kind IN ('iso', 'cloud-image')),
  active         boolean NOT NULL DEFAULT true,
  latest_version int NOT NULL CHECK (latest_version >= 1),
  created_by     uuid,
  version        bigint NOT NULL DEFAULT 1,
  created_at     timestamptz NOT NULL DEFAULT now(),
  updated_at     timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT iso_templates_name_key UNIQUE (name)
);

-- A version's spec is the canonical JSON of shared/isotemplate.Spec; immutable (ISOs pin it).
CREATE TABLE iso_template_versions (
  iso_template_id uuid NOT NULL REFERENCES iso_templates (id) ON DELETE RESTRICT,
  number          int NOT NULL CHECK (number >= 1),
  spec            jsonb NOT NULL,
  spec_hash       text NOT NULL,
  created_by      uuid,
  created_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (iso_template_id, number)
);

-- +goose StatementBegin
CREATE FUNCTION iso_template_versions_immutable() RETURNS trigger AS $$
BEGIN
  RAISE EXCEPTION 'version % of ISO template % is immutable', OLD.number, OLD.iso_template_id
    USING ERRCODE = 'integrity_constraint_violation';
END
$$ LANGUAGE plpgsql;
-- +goose StatementEnd
CREATE TRIGGER iso_template_versions_immutable BEFORE UPDATE ON iso_template_versions
  FOR EACH ROW EXECUTE FUNCTION iso_template_versions_immutable();

-- An ISO is one build of an ISO template version on a node of a cluster, and what its builds
-- produced (outputs, as shared/horizon.ISOOutputs). ISOs are catalogue objects: admins build
-- them, every team's stacks may use them (executions.config->>'iso_id'). config_hash names
-- what the next build builds; built_hash what the last successful one built.
CREATE TABLE isos (
  id                   uuid PRIMARY KEY DEFAULT uuid_v7(),
  name                 text NOT NULL,
  iso_template_id      uuid NOT NULL,
  iso_template_version int NOT NULL,
  kind                 text NOT NULL CHECK (kind IN ('iso', 'cloud-image')), -- the template's, which never changes
  server_id            uuid NOT NULL REFERENCES proxmox_servers (id) ON DELETE RESTRICT,
  node                 text NOT NULL,
  storage              text NOT NULL,
  artifact_storage     text NOT NULL,
  state                text NOT NULL DEFAULT 'building'
                       CHECK (state IN ('building', 'built', 'failed', 'removing', 'removed')),
  config_hash          text NOT NULL,
  built_hash           text,
  outputs              jsonb NOT NULL DEFAULT '{}',
  version              bigint NOT NULL DEFAULT 1,
  created_by           uuid,
  created_at           timestamptz NOT NULL DEFAULT now(),
  updated_at           timestamptz NOT NULL DEFAULT now(),
  FOREIGN KEY (iso_template_id, iso_template_version) REFERENCES iso_template_versions (iso_template_id, number) ON DELETE RESTRICT
);
CREATE INDEX isos_server_idx ON isos (server_id, id) WHERE state <> 'removed';
CREATE INDEX isos_template_idx ON isos (iso_template_id, iso_template_version);
-- Which stacks use an ISO (deleting one that is used is refused).
CREATE INDEX executions_iso_idx ON executions ((config->>'iso_id')) WHERE config ? 'iso_id';

-- Every state change of an ISO: who, when, and the error if any.
CREATE TABLE iso_state_history (
  id         uuid PRIMARY KEY DEFAULT uuid_v7(),
  iso_id     uuid NOT NULL REFERENCES isos (id) ON DELETE CASCADE,
  run_id     uuid,
  from_state text,
  to_state   text NOT NULL,
  actor_id   uuid,
  error      text,
  at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX iso_state_history_iso_idx ON iso_state_history (iso_id, id);

-- An ISO build is a run of the engine (kind iso_build, one step per stage); its removal too.
-- Their log lines use the ISO's id as log_lines.stack_id, the owner of a run's logs.
ALTER TABLE runs ADD COLUMN iso_id uuid REFERENCES isos (id) ON DELETE CASCADE;
ALTER TABLE runs ADD CONSTRAINT runs_owner_check CHECK (stack_id IS NULL OR iso_id IS NULL);
ALTER TABLE runs DROP CONSTRAINT runs_kind_check;
ALTER TABLE runs ADD CONSTRAINT runs_kind_check
  CHECK (kind IN ('deploy', 'reapply', 'retry', 'run_again', 'upgrade', 'remove', 'action', 'iso_build', 'iso_remove'));
-- At most one run in progress per ISO, as per stack.
CREATE UNIQUE INDEX runs_one_active_iso_key ON runs (iso_id) WHERE state IN ('queued', 'running', 'canceling');
CREATE INDEX runs_iso_idx ON runs (iso_id, id);

ALTER TABLE steps DROP CONSTRAINT steps_kind_check;
ALTER TABLE steps ADD CONSTRAINT steps_kind_check CHECK (kind IN ('apply', 'destroy', 'nagios_publish', 'nagios_unpublish',
  'iso_preflight', 'iso_image', 'iso_vm_create', 'iso_vm_configure', 'iso_template', 'iso_clone', 'iso_remove'));

-- The VM ids an ISO's spec names (its VM and clones) are reserved in the cluster like those
-- of stack executions, so that neither takes the other's.
ALTER TABLE vm_ids ALTER COLUMN execution_id DROP NOT NULL;
ALTER TABLE vm_ids ADD COLUMN iso_id uuid REFERENCES isos (id) ON DELETE CASCADE;
ALTER TABLE vm_ids ADD CONSTRAINT vm_ids_owner_check CHECK ((execution_id IS NULL) <> (iso_id IS NULL));
CREATE INDEX vm_ids_iso_idx ON vm_ids (iso_id);

-- +goose Down
DROP INDEX vm_ids_iso_idx;
DELETE FROM vm_ids WHERE iso_id IS NOT NULL;
ALTER TABLE vm_ids DROP CONSTRAINT vm_ids_owner_check;
ALTER TABLE vm_ids DROP COLUMN iso_id;
ALTER TABLE vm_ids ALTER COLUMN execution_id SET NOT NULL;
DELETE FROM steps WHERE kind LIKE 'iso\_%';
ALTER TABLE steps DROP CONSTRAINT steps_kind_check;
ALTER TABLE steps ADD CONSTRAINT steps_kind_check CHECK (kind IN ('apply', 'destroy', 'nagios_publish', 'nagios_unpublish'));
DELETE FROM runs WHERE iso_id IS NOT NULL OR kind IN ('iso_build', 'iso_remove');
DROP INDEX runs_iso_idx;
DROP INDEX runs_one_active_iso_key;
ALTER TABLE runs DROP CONSTRAINT runs_kind_check;
ALTER TABLE runs ADD CONSTRAINT runs_kind_check
  CHECK (kind IN ('deploy', 'reapply', 'retry', 'run_again', 'upgrade', 'remove', 'action', 'iso_build'));
ALTER TABLE runs DROP CONSTRAINT runs_owner_check;
ALTER TABLE runs DROP COLUMN iso_id;
DROP TABLE iso_state_history;
DROP INDEX executions_iso_idx;
DROP TABLE isos;
DROP TABLE iso_template_versions;
DROP FUNCTION iso_template_versions_immutable();
DROP TABLE iso_templates;
