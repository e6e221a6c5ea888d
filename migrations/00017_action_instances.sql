-- +goose Up

-- A terraform action's run applies the action's module in a workspace of its own; what it
-- leaves is an action instance, undone on its own later (a destroy with the code of the version
-- that made it). Steps of kind action_apply and action_destroy work on one instance.
ALTER TABLE steps DROP CONSTRAINT steps_kind_check;
ALTER TABLE steps ADD CONSTRAINT steps_kind_check CHECK (kind IN ('apply', 'destroy', 'nagios_publish', 'nagios_unpublish',
  'iso_preflight', 'iso_image', 'iso_vm_create', 'iso_vm_configure', 'iso_template', 'iso_clone', 'iso_remove', 'action_script',
  'action_apply', 'action_destroy'));

-- An instance is made with the run that applies it (run_id: its answers and outputs are that
-- run's action_runs row). applied_at is set when its apply succeeded; an instance whose apply
-- failed may hold part of what it made and is undone like the others. variables are the values
-- the apply gave Terraform, sealed whole (secret answers among them), which its destroy gives
-- again; NULL until the apply got that far. ended says why it is gone: undone (destroyed) or abandoned (force-remove).
CREATE TABLE action_instances (
  id               uuid PRIMARY KEY DEFAULT uuid_v7(),
  stack_id         uuid NOT NULL REFERENCES stacks (id) ON DELETE CASCADE,
  number           int NOT NULL,
  action           text NOT NULL,
  template_version int NOT NULL,
  commit           text NOT NULL,
  run_id           uuid NOT NULL UNIQUE REFERENCES runs (id) ON DELETE CASCADE,
  created_by       uuid REFERENCES users (id) ON DELETE SET NULL,
  created_at       timestamptz NOT NULL DEFAULT now(),
  applied_at       timestamptz,
  variables        bytea,
  ended            text CHECK (ended IN ('undone', 'abandoned')),
  ended_at         timestamptz,
  UNIQUE (stack_id, number)
);

ALTER TABLE steps ADD COLUMN action_instance_id uuid REFERENCES action_instances (id) ON DELETE SET NULL;
CREATE INDEX steps_action_instance_idx ON steps (action_instance_id) WHERE action_instance_id IS NOT NULL;

-- An undo run is an action run too (its history), of the instance it undoes.
ALTER TABLE action_runs ADD COLUMN instance_id uuid REFERENCES action_instances (id) ON DELETE SET NULL;
ALTER TABLE action_runs ADD COLUMN undo boolean NOT NULL DEFAULT false;

-- +goose Down
ALTER TABLE action_runs DROP COLUMN undo;
ALTER TABLE action_runs DROP COLUMN instance_id;
ALTER TABLE steps DROP COLUMN action_instance_id;
DROP TABLE action_instances;
DELETE FROM steps WHERE kind IN ('action_apply', 'action_destroy');
ALTER TABLE steps DROP CONSTRAINT steps_kind_check;
ALTER TABLE steps ADD CONSTRAINT steps_kind_check CHECK (kind IN ('apply', 'destroy', 'nagios_publish', 'nagios_unpublish',
  'iso_preflight', 'iso_image', 'iso_vm_create', 'iso_vm_configure', 'iso_template', 'iso_clone', 'iso_remove', 'action_script'));
