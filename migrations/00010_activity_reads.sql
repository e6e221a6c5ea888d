-- +goose Up

-- GET /v1/activity reads the trail newest first, within the caller's teams.
CREATE INDEX activity_team_idx ON activity (team_id, id);

-- +goose Down
DROP INDEX activity_team_idx;
