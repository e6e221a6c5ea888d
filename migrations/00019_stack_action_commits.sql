-- +goose Up

-- A stack runs its terraform actions at the commits its template version pinned, except where
-- a force retry re-resolved an action's branch: action_commits holds those re-pins (action →
-- commit), as executions.commit holds a job's. An upgrade to another version clears them: the
-- new version's pins apply.
ALTER TABLE stacks ADD COLUMN action_commits jsonb NOT NULL DEFAULT '{}';

-- +goose Down
ALTER TABLE stacks DROP COLUMN action_commits;
