-- +goose Up

-- The durable copy of every deploy log line (shared/logstream). A line's id is the Redis stream
-- entry id that ordered it within its run (stream_ms-stream_seq, also the SSE event id); lines
-- written while Redis was unreachable carry a fallback id with bit 62 of stream_seq set. Runs
-- and steps are not referenced: their tables belong to the engine's migration, which may add
-- the foreign keys. stack_id lets a stack's logs be listed across runs and deleted with it.
-- step_id is NULL for run-level lines; job and execution are NULL together for them too.
CREATE TABLE log_lines (
  run_id     uuid NOT NULL,
  stream_ms  bigint NOT NULL,
  stream_seq bigint NOT NULL,
  stack_id   uuid NOT NULL,
  step_id    uuid,
  job        text,
  execution  int,
  at         timestamptz NOT NULL,
  fd         text NOT NULL CHECK (fd IN ('stdout', 'stderr', 'horizon')),
  text       text NOT NULL,
  PRIMARY KEY (run_id, stream_ms, stream_seq)
);
-- Filtered downloads and backfills: one job's execution, in order, straight off the index.
CREATE INDEX log_lines_job_idx ON log_lines (run_id, job, execution, stream_ms, stream_seq);
-- A stack's logs across its runs, in order (run ids are time-ordered), and deleting them.
CREATE INDEX log_lines_stack_idx ON log_lines (stack_id, run_id, stream_ms, stream_seq);

-- The end of a run's log: what the eof entry of its Redis stream says, kept after the stream
-- expires so that a reader replaying the log from Postgres knows it is complete.
CREATE TABLE log_ends (
  run_id     uuid PRIMARY KEY,
  stack_id   uuid NOT NULL,
  stream_ms  bigint NOT NULL,
  stream_seq bigint NOT NULL,
  status     text NOT NULL,
  at         timestamptz NOT NULL
);
CREATE INDEX log_ends_stack_idx ON log_ends (stack_id);

-- +goose Down
DROP TABLE log_ends, log_lines;
