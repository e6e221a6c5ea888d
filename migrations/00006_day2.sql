-- +goose Up

-- A step may run with another template version than its stack's: the destroy of a job an
-- upgrade removes runs the code of the version that created it.
ALTER TABLE steps ADD COLUMN template_version int;
-- A step planned only because a job it depends on changes runs only if its own answers did
-- change once that job has run (otherwise it is skipped: "inputs unchanged").
ALTER TABLE steps ADD COLUMN only_if_changed bool NOT NULL DEFAULT false;

-- +goose Down
ALTER TABLE steps DROP COLUMN only_if_changed;
ALTER TABLE steps DROP COLUMN template_version;
