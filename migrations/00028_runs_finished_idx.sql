-- +goose Up

-- The reconciler finds the runs that finished recently without their log's end (a worker died,
-- or a store was down, between the commit that finished the run and the end of its log): this
-- keeps that scan to the recent runs, however many there are.
CREATE INDEX runs_finished_idx ON runs (finished_at) WHERE finished_at IS NOT NULL;

-- +goose Down
DROP INDEX runs_finished_idx;
