-- +goose Up

-- A team's quotas: the most its stacks may use in each dimension, in all (team_quotas) and
-- narrowed per environment (team_environment_quotas); null is unlimited, and a team without a
-- row has no quota. Usage is not stored: it is counted from the executions of the team's
-- stacks. A request that grows usage locks the team's team_quotas row (FOR UPDATE) in the
-- transaction that writes its run, so two requests cannot both take the last of a quota.
CREATE TABLE team_quotas (
  team_id    uuid PRIMARY KEY REFERENCES teams (id) ON DELETE CASCADE,
  machines   bigint CHECK (machines >= 0),
  vcpus      bigint CHECK (vcpus >= 0),
  memory_mib bigint CHECK (memory_mib >= 0),
  disk_gib   bigint CHECK (disk_gib >= 0),
  version    bigint NOT NULL DEFAULT 1,
  updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE team_environment_quotas (
  team_id        uuid NOT NULL REFERENCES team_quotas (team_id) ON DELETE CASCADE,
  environment_id uuid NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
  machines       bigint CHECK (machines >= 0),
  vcpus          bigint CHECK (vcpus >= 0),
  memory_mib     bigint CHECK (memory_mib >= 0),
  disk_gib       bigint CHECK (disk_gib >= 0),
  PRIMARY KEY (team_id, environment_id)
);
CREATE INDEX team_environment_quotas_environment_idx ON team_environment_quotas (environment_id);

-- +goose Down
DROP TABLE team_environment_quotas, team_quotas;
