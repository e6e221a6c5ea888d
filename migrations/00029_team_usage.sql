-- +goose Up

-- What each team's stacks use, per environment, kept as it changes, so that the preflight's
-- quota check reads a few rows instead of summing every execution of the team (summing a
-- team's 1 000 executions made a deploy's preflight half as slow again).
--
-- Which executions count is decided in one place, quota_counts below: the triggers that keep
-- team_usage and every read that leaves a stack out (the preflight's "what the other stacks
-- use") call it, and the tests hold team_usage to the SUM of the counted executions' costs
-- (executions.machines…, 00027) after every kind of change. The triggers add what a change
-- adds and take away what it takes (never a recount), so concurrent writers commute: each
-- holds its team_usage rows only until it commits, and the quota check still serialises on
-- the team's team_quotas row as before.
CREATE TABLE team_usage (
  team_id        uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
  environment_id uuid NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
  -- How many executions count (an environment is "used" while one does, even at no cost).
  executions     bigint NOT NULL DEFAULT 0,
  machines       bigint NOT NULL DEFAULT 0,
  vcpus          bigint NOT NULL DEFAULT 0,
  memory_mib     bigint NOT NULL DEFAULT 0,
  disk_gib       bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (team_id, environment_id)
);
CREATE INDEX team_usage_environment_idx ON team_usage (environment_id);

-- quota_counts is the rule: an execution counts against its team's quotas while it is not yet
-- destroyed (active, or removing until its destroy ends) and its stack is neither a draft nor
-- removed (a failed stack's count: its machines may exist). A plain SQL function, so the
-- planner inlines it and the partial index executions_cost_idx still serves a stack's sum.
CREATE FUNCTION quota_counts(stack_state text, execution_state text) RETURNS boolean AS $$
  SELECT stack_state NOT IN ('draft', 'removed') AND execution_state IN ('active', 'removing')
$$ LANGUAGE sql IMMUTABLE PARALLEL SAFE;

-- An execution written, deleted, or changed in state, stack or cost moves its cost: out of
-- its stack's team and environment as it was (if it counted), into them as it is (if it
-- counts). Its stack is read as it is now; a stack's own changes are stacks_usage's.
-- +goose StatementBegin
CREATE FUNCTION executions_usage() RETURNS trigger AS $$
BEGIN
  INSERT INTO team_usage AS u (team_id, environment_id, executions, machines, vcpus, memory_mib, disk_gib)
  SELECT s.team_id, s.environment_id, sum(d.sign), sum(d.sign * d.machines), sum(d.sign * d.vcpus),
      sum(d.sign * d.memory_mib), sum(d.sign * d.disk_gib)
    FROM (SELECT -1, OLD.stack_id, OLD.state, OLD.machines, OLD.vcpus, OLD.memory_mib, OLD.disk_gib WHERE TG_OP <> 'INSERT'
          UNION ALL
          SELECT 1, NEW.stack_id, NEW.state, NEW.machines, NEW.vcpus, NEW.memory_mib, NEW.disk_gib WHERE TG_OP <> 'DELETE')
      AS d (sign, stack_id, state, machines, vcpus, memory_mib, disk_gib)
    JOIN stacks s ON s.id = d.stack_id
    WHERE quota_counts(s.state, d.state)
    GROUP BY 1, 2
    HAVING sum(d.sign) <> 0 OR sum(d.sign * d.machines) <> 0 OR sum(d.sign * d.vcpus) <> 0
      OR sum(d.sign * d.memory_mib) <> 0 OR sum(d.sign * d.disk_gib) <> 0
    ORDER BY 1, 2
  ON CONFLICT (team_id, environment_id) DO UPDATE SET executions = u.executions + excluded.executions,
    machines = u.machines + excluded.machines, vcpus = u.vcpus + excluded.vcpus,
    memory_mib = u.memory_mib + excluded.memory_mib, disk_gib = u.disk_gib + excluded.disk_gib;
  RETURN NULL;
END
$$ LANGUAGE plpgsql;
-- +goose StatementEnd
CREATE TRIGGER executions_usage AFTER INSERT OR DELETE ON executions
  FOR EACH ROW EXECUTE FUNCTION executions_usage();
-- Not UPDATE OF: executions_cost changes the costs in a BEFORE trigger, which UPDATE OF misses.
CREATE TRIGGER executions_usage_update AFTER UPDATE ON executions
  FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state OR OLD.stack_id IS DISTINCT FROM NEW.stack_id
    OR OLD.machines IS DISTINCT FROM NEW.machines OR OLD.vcpus IS DISTINCT FROM NEW.vcpus
    OR OLD.memory_mib IS DISTINCT FROM NEW.memory_mib OR OLD.disk_gib IS DISTINCT FROM NEW.disk_gib)
  EXECUTE FUNCTION executions_usage();

-- A stack changed in state, team or environment moves what its executions cost (at their
-- costs as they are) from where it counted to where it counts; a stack deleted (before its
-- executions go with it, which then find no stack) takes it away. Only then does a stack
-- moved to another template version rewrite its executions' answers as they are, so that
-- executions_cost gives them the new version's costs and executions_usage moves the
-- difference where the stack now counts: this one function replaces stacks_version_cost
-- (00027) so that the order of the two is written down, not left to the triggers' names.
-- +goose StatementBegin
CREATE FUNCTION stacks_usage() RETURNS trigger AS $$
BEGIN
  IF TG_OP = 'DELETE' OR OLD.state IS DISTINCT FROM NEW.state OR OLD.team_id IS DISTINCT FROM NEW.team_id
      OR OLD.environment_id IS DISTINCT FROM NEW.environment_id THEN
    INSERT INTO team_usage AS u (team_id, environment_id, executions, machines, vcpus, memory_mib, disk_gib)
    SELECT d.team_id, d.environment_id, sum(d.sign), sum(d.sign * x.machines), sum(d.sign * x.vcpus),
        sum(d.sign * x.memory_mib), sum(d.sign * x.disk_gib)
      FROM executions x,
        (SELECT -1, OLD.team_id, OLD.environment_id, OLD.state
         UNION ALL
         SELECT 1, NEW.team_id, NEW.environment_id, NEW.state WHERE TG_OP <> 'DELETE') AS d (sign, team_id, environment_id, state)
      WHERE x.stack_id = OLD.id AND quota_counts(d.state, x.state)
      GROUP BY 1, 2
      HAVING sum(d.sign) <> 0 OR sum(d.sign * x.machines) <> 0 OR sum(d.sign * x.vcpus) <> 0
        OR sum(d.sign * x.memory_mib) <> 0 OR sum(d.sign * x.disk_gib) <> 0
      ORDER BY 1, 2
    ON CONFLICT (team_id, environment_id) DO UPDATE SET executions = u.executions + excluded.executions,
      machines = u.machines + excluded.machines, vcpus = u.vcpus + excluded.vcpus,
      memory_mib = u.memory_mib + excluded.memory_mib, disk_gib = u.disk_gib + excluded.disk_gib;
  END IF;
  IF TG_OP = 'DELETE' THEN
    RETURN OLD;
  END IF;
  IF OLD.template_id IS DISTINCT FROM NEW.template_id OR OLD.template_version IS DISTINCT FROM NEW.template_version THEN
    UPDATE executions SET config = config WHERE stack_id = NEW.id;
  END IF;
  RETURN NULL;
END
$$ LANGUAGE plpgsql;
-- +goose StatementEnd
DROP TRIGGER stacks_version_cost ON stacks;
DROP FUNCTION stacks_version_cost();
CREATE TRIGGER stacks_usage AFTER UPDATE ON stacks
  FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state OR OLD.team_id IS DISTINCT FROM NEW.team_id
    OR OLD.environment_id IS DISTINCT FROM NEW.environment_id
    OR OLD.template_id IS DISTINCT FROM NEW.template_id OR OLD.template_version IS DISTINCT FROM NEW.template_version)
  EXECUTE FUNCTION stacks_usage();
CREATE TRIGGER stacks_usage_delete BEFORE DELETE ON stacks
  FOR EACH ROW EXECUTE FUNCTION stacks_usage();

-- What the stacks use now.
INSERT INTO team_usage (team_id, environment_id, executions, machines, vcpus, memory_mib, disk_gib)
SELECT s.team_id, s.environment_id, count(*), sum(x.machines), sum(x.vcpus), sum(x.memory_mib), sum(x.disk_gib)
  FROM stacks s JOIN executions x ON x.stack_id = s.id
  WHERE quota_counts(s.state, x.state)
  GROUP BY 1, 2;

-- +goose Down
DROP TRIGGER stacks_usage_delete ON stacks;
DROP TRIGGER stacks_usage ON stacks;
DROP FUNCTION stacks_usage();
-- +goose StatementBegin
CREATE FUNCTION stacks_version_cost() RETURNS trigger AS $$
BEGIN
  UPDATE executions SET config = config WHERE stack_id = NEW.id;
  RETURN NULL;
END
$$ LANGUAGE plpgsql;
-- +goose StatementEnd
CREATE TRIGGER stacks_version_cost AFTER UPDATE OF template_id, template_version ON stacks
  FOR EACH ROW WHEN (OLD.template_id IS DISTINCT FROM NEW.template_id OR OLD.template_version IS DISTINCT FROM NEW.template_version)
  EXECUTE FUNCTION stacks_version_cost();
DROP TRIGGER executions_usage_update ON executions;
DROP TRIGGER executions_usage ON executions;
DROP FUNCTION executions_usage(), quota_counts(text, text);
DROP TABLE team_usage;
