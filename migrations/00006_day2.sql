-- +goose Up

-- A step may run with another template version than its stack's: the destroy of a job an
-- upgrade removes runs the code of the version that created it.
ALTER TABLE steps ADD COLUMN template_version int;
-- A step planned only because a job it depends on changes runs only if its own answers did
-- change once that job has run (otherwise it is skipped: "inputs unchanged").
ALTER TABLE steps ADD COLUMN only_if_changed bool NOT NULL DEFAULT false;

-- The kind of a stack's latest run: a failed stack whose last run was a removal offers only
-- to finish (or force) the removal.
ALTER TABLE stacks ADD COLUMN last_run_kind text;

-- When an execution's cleanup scripts last succeeded: a destroy tried again (a removal retried
-- after its VM was already stopped) does not need, and could not reach, the machine again.
ALTER TABLE executions ADD COLUMN cleaned_up_at timestamptz;

-- +goose Down
ALTER TABLE executions DROP COLUMN cleaned_up_at;
ALTER TABLE stacks DROP COLUMN last_run_kind;
ALTER TABLE steps DROP COLUMN only_if_changed;
ALTER TABLE steps DROP COLUMN template_version;
