-- +goose Up

-- What each execution costs against its team's quotas, stored beside it so that a team's usage
-- is one indexed SUM instead of reading every execution's answers at every check. The database
-- computes it, in the statement that writes the answers (executions.config) or moves the stack
-- to another template version, so no writer can forget it and no crash can leave it behind:
-- the rule is template.Job.Cost's (shared/template), and a test holds the two to the same
-- answers. Whether an execution counts (its state and its stack's) is still decided at the
-- SUM, so a removal frees at its end and a force-remove at once, as before.
ALTER TABLE executions
  ADD COLUMN machines   bigint NOT NULL DEFAULT 0,
  ADD COLUMN vcpus      bigint NOT NULL DEFAULT 0,
  ADD COLUMN memory_mib bigint NOT NULL DEFAULT 0,
  ADD COLUMN disk_gib   bigint NOT NULL DEFAULT 0;

-- resource_amount is what one declared amount (a number or {"param": name}) of job j counts
-- with these answers: the answer when it is a number, else the parameter's default when that
-- is a number, else 0; rounded up, 0 when negative, at most 2^53-1.
-- +goose StatementBegin
CREATE FUNCTION resource_amount(amount jsonb, j jsonb, answers jsonb) RETURNS bigint AS $$
DECLARE
  f numeric := 0;
  p text;
  d jsonb;
BEGIN
  CASE jsonb_typeof(amount)
  WHEN 'number' THEN
    f := (amount #>> '{}')::numeric;
  WHEN 'object' THEN
    p := amount ->> 'param';
    IF p IS NULL OR p = '' THEN
      RETURN 0;
    END IF;
    IF jsonb_typeof(answers -> p) = 'number' THEN
      f := (answers ->> p)::numeric;
    ELSE
      SELECT pm -> 'default' INTO d FROM jsonb_array_elements(coalesce(j -> 'parameters', '[]')) WITH ORDINALITY AS x (pm, n)
        WHERE pm ->> 'name' = p ORDER BY n LIMIT 1;
      IF jsonb_typeof(d) = 'number' THEN
        f := (d #>> '{}')::numeric;
      END IF;
    END IF;
  ELSE
    RETURN 0;
  END CASE;
  RETURN CASE WHEN f <= 0 THEN 0 WHEN f > 9007199254740991 THEN 9007199254740991 ELSE ceil(f)::bigint END;
END
$$ LANGUAGE plpgsql IMMUTABLE;
-- +goose StatementEnd

-- execution_cost is what one execution of the job called job in a template version's definition
-- costs with these answers: one machine and its declared resources for a machine job, nothing
-- for another job or a job the definition does not have.
-- +goose StatementBegin
CREATE FUNCTION execution_cost(definition jsonb, job text, answers jsonb,
  OUT machines bigint, OUT vcpus bigint, OUT memory_mib bigint, OUT disk_gib bigint) AS $$
DECLARE
  j jsonb;
BEGIN
  machines := 0; vcpus := 0; memory_mib := 0; disk_gib := 0;
  SELECT jb INTO j
    FROM jsonb_array_elements(coalesce(definition -> 'phases', '[]')) WITH ORDINALITY AS ph (phase, pn),
         jsonb_array_elements(coalesce(ph.phase -> 'jobs', '[]')) WITH ORDINALITY AS js (jb, jn)
    WHERE jb ->> 'name' = job ORDER BY pn, jn LIMIT 1;
  IF j IS NULL OR j -> 'machine' IS DISTINCT FROM 'true'::jsonb THEN
    RETURN;
  END IF;
  machines := 1;
  vcpus := resource_amount(j -> 'resources' -> 'cores', j, answers);
  memory_mib := resource_amount(j -> 'resources' -> 'memory_mb', j, answers);
  disk_gib := resource_amount(j -> 'resources' -> 'disk_gb', j, answers);
END
$$ LANGUAGE plpgsql IMMUTABLE;
-- +goose StatementEnd

-- An execution's cost follows its answers, its job and its stack's template version.
-- +goose StatementBegin
CREATE FUNCTION executions_cost() RETURNS trigger AS $$
BEGIN
  SELECT c.machines, c.vcpus, c.memory_mib, c.disk_gib INTO NEW.machines, NEW.vcpus, NEW.memory_mib, NEW.disk_gib
    FROM stacks s
    JOIN template_versions v ON v.template_id = s.template_id AND v.number = s.template_version,
    LATERAL execution_cost(v.definition, NEW.job, NEW.config -> 'parameters') c
    WHERE s.id = NEW.stack_id;
  IF NOT FOUND THEN -- no stack: the foreign key refuses the row anyway
    NEW.machines := 0; NEW.vcpus := 0; NEW.memory_mib := 0; NEW.disk_gib := 0;
  END IF;
  RETURN NEW;
END
$$ LANGUAGE plpgsql;
-- +goose StatementEnd
CREATE TRIGGER executions_cost BEFORE INSERT OR UPDATE OF config, job, stack_id ON executions
  FOR EACH ROW EXECUTE FUNCTION executions_cost();

-- A stack moved to another template version (an upgrade) costs what the new version declares:
-- rewriting its executions' answers as they are runs executions_cost on each.
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

-- The backfill: every existing execution, through the trigger above.
UPDATE executions SET config = config;

-- Usage sums the costs of the executions that count, stack by stack: this index holds them, so
-- that on a large table the SUM need not read the executions' rows (the planner's choice).
CREATE INDEX executions_cost_idx ON executions (stack_id) INCLUDE (machines, vcpus, memory_mib, disk_gib)
  WHERE state IN ('active', 'removing');

-- +goose Down
DROP INDEX executions_cost_idx;
DROP TRIGGER stacks_version_cost ON stacks;
DROP TRIGGER executions_cost ON executions;
DROP FUNCTION stacks_version_cost(), executions_cost(), execution_cost(jsonb, text, jsonb), resource_amount(jsonb, jsonb, jsonb);
ALTER TABLE executions DROP COLUMN machines, DROP COLUMN vcpus, DROP COLUMN memory_mib, DROP COLUMN disk_gib;
