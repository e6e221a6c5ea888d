-- +goose Up

-- Terraform state, one row per workspace (an execution), served to Terraform by the workers'
-- http state backend (shared/tfstate). The state is sealed with the installation's key: it
-- holds sensitive outputs and variables in clear. state is NULL while a first run holds the lock
-- and has not saved yet. Who holds a workspace's lock is a Postgres session advisory lock taken
-- by the worker that serves the run; lock_info is only what Terraform reports to a second run.
CREATE TABLE terraform_states (
  workspace  text PRIMARY KEY,
  state      bytea,
  lock_info  jsonb,
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE terraform_states;
