-- +goose Up

-- An action run (runs.kind 'action', already allowed since 00005: restated here so that this
-- migration says what actions need) runs a template action on a deployed stack. A script
-- action is one step of kind 'action_script' on the one machine the user chose.
ALTER TABLE runs DROP CONSTRAINT runs_kind_check;
ALTER TABLE runs ADD CONSTRAINT runs_kind_check
  CHECK (kind IN ('deploy', 'reapply', 'retry', 'run_again', 'upgrade', 'remove', 'action', 'iso_build', 'iso_remove'));

ALTER TABLE steps DROP CONSTRAINT steps_kind_check;
ALTER TABLE steps ADD CONSTRAINT steps_kind_check CHECK (kind IN ('apply', 'destroy', 'nagios_publish', 'nagios_unpublish',
  'iso_preflight', 'iso_image', 'iso_vm_create', 'iso_vm_configure', 'iso_template', 'iso_clone', 'iso_remove', 'action_script'));

-- What an action run was asked and what it produced, kept with the run: its history. Secrets
-- (secret parameters, inputs typed over a secret prefill, secret outputs) are sealed JSON
-- objects; an input left out is resolved from the stack's outputs when the action runs.
CREATE TABLE action_runs (
  run_id            uuid PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
  stack_id          uuid NOT NULL REFERENCES stacks (id) ON DELETE CASCADE,
  action            text NOT NULL,
  kind              text NOT NULL CHECK (kind IN ('script', 'terraform')),
  template_version  int NOT NULL,
  execution_id      uuid REFERENCES executions (id) ON DELETE SET NULL,
  job               text NOT NULL DEFAULT '',
  execution_index   int,
  parameters        jsonb NOT NULL DEFAULT '{}',
  secret_parameters bytea,
  inputs            jsonb NOT NULL DEFAULT '{}',
  secret_inputs     bytea,
  outputs           jsonb NOT NULL DEFAULT '{}',
  secret_outputs    bytea
);
CREATE INDEX action_runs_stack_idx ON action_runs (stack_id, run_id);

-- +goose Down
DROP TABLE action_runs;
DELETE FROM steps WHERE kind = 'action_script';
ALTER TABLE steps DROP CONSTRAINT steps_kind_check;
ALTER TABLE steps ADD CONSTRAINT steps_kind_check CHECK (kind IN ('apply', 'destroy', 'nagios_publish', 'nagios_unpublish',
  'iso_preflight', 'iso_image', 'iso_vm_create', 'iso_vm_configure', 'iso_template', 'iso_clone', 'iso_remove'));
