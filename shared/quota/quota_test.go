package quota_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"horizon/migrations"

	"horizon/shared/horizon"
	"horizon/shared/quota"
	"horizon/shared/store"
	"horizon/shared/template"
	"horizon/shared/testkit"
)

// Version 1 reads vCPUs and memory from parameters (memory with a default, vCPUs without) and
// declares a constant disk; "tool" is not a machine job. Version 2 (an upgrade) makes every
// amount a constant.
const costV1 = `name: cost
phases:
  - name: one
    jobs:
      - name: vm
        source: { repo: https://git.example.org/vm.git, branch: main, path: vm }
        machine: true
        executions: { multiple: true, min: 1, max: 50 }
        parameters:
          - { name: cores, type: number, minimum: 0 }
          - { name: memory_mb, type: number, default: 1536.5, minimum: 0 }
          - { name: label, type: string, default: x }
        resources: { cores: { param: cores }, memory_mb: { param: memory_mb }, disk_gb: 20 }
      - name: plain
        source: { repo: https://git.example.org/vm.git, branch: main, path: plain }
        machine: true
  - name: two
    jobs:
      - name: tool
        source: { repo: https://git.example.org/vm.git, branch: main, path: tool }
`

const costV2 = `name: cost
phases:
  - name: one
    jobs:
      - name: vm
        source: { repo: https://git.example.org/vm.git, branch: main, path: vm }
        machine: true
        executions: { multiple: true, min: 1, max: 50 }
        parameters:
          - { name: cores, type: number, minimum: 0 }
        resources: { cores: 3, memory_mb: 1000, disk_gb: 7 }
`

// TestStoredCostsFollowTheTemplate holds the cost the database keeps beside each execution to
// template.Job.Cost, for every kind of answer, after an edit of the answers and after the
// stack moves to another template version; and Count to the sum of those costs.
func TestStoredCostsFollowTheTemplate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testkit.DB(t)
	tmplID, defs := costTemplate(t, db)
	team, err := store.TeamCreate(ctx, db, "team")
	if err != nil {
		t.Fatal(err)
	}
	env, err := store.EnvironmentCreate(ctx, db, horizon.Environment{Name: "env"})
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.StackCreate(ctx, db, horizon.Stack{TeamID: team.ID, Name: "s", EnvironmentID: env.ID, TemplateID: tmplID, TemplateVersion: 1})
	if err != nil {
		t.Fatal(err)
	}
	answers := []map[string]any{
		{"cores": 2, "memory_mb": 4096},
		{"cores": 2.25, "memory_mb": 1024.1}, // rounded up
		{},                                   // no default for cores (0), memory's default
		{"cores": -3, "memory_mb": -1},       // negative: 0
		{"cores": "4", "memory_mb": true},    // not numbers: the defaults
		{"cores": 1e300, "memory_mb": 9007199254740993}, // beyond 2^53-1: capped
		{"label": "y"},
	}
	type row struct {
		job  string
		conf map[string]any
	}
	var rows []row
	for _, a := range answers {
		rows = append(rows, row{"vm", a})
	}
	rows = append(rows, row{"plain", map[string]any{"cores": 9}}, row{"tool", nil}, row{"gone", map[string]any{"cores": 2}})
	ids := make([]uuid.UUID, len(rows))
	for i, r := range rows {
		e, err := store.ExecutionInsert(ctx, db, horizon.Execution{StackID: st.ID, Job: r.job, Index: i, Commit: "c",
			Config: horizon.ExecutionConfig{Parameters: r.conf}})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = e.ID
	}
	check := func(stage string, version int) {
		t.Helper()
		var want horizon.Resources
		for i, r := range rows {
			var got horizon.Resources
			if err := db.QueryRow(ctx, `SELECT machines, vcpus, memory_mib, disk_gib FROM executions WHERE id = $1`, ids[i]).
				Scan(&got.Machines, &got.VCPUs, &got.MemoryMiB, &got.DiskGiB); err != nil {
				t.Fatal(err)
			}
			// The answers as the API reads them back: JSON numbers decoded as float64.
			var decoded map[string]any
			raw, _ := json.Marshal(r.conf)
			if err := json.Unmarshal(raw, &decoded); err != nil {
				t.Fatal(err)
			}
			var w horizon.Resources
			if j := defs[version].Job(r.job); j != nil {
				w = j.Cost(decoded)
			}
			if got != w {
				t.Errorf("%s: %s execution %d with %v: stored %+v, template.Job.Cost %+v", stage, r.job, i, r.conf, got, w)
			}
			want = want.Add(w)
		}
		u, err := quota.Count(ctx, db, team.ID, uuid.Nil)
		if err != nil {
			t.Fatal(err)
		}
		if u.Total != want || u.Environments[env.ID] != want {
			t.Errorf("%s: Count %+v (in the environment %+v), want %+v", stage, u.Total, u.Environments[env.ID], want)
		}
	}
	// Counted from its first deploy.
	if _, err := db.Exec(ctx, `UPDATE stacks SET state = 'deployed' WHERE id = $1`, st.ID); err != nil {
		t.Fatal(err)
	}
	check("inserted", 1)

	rows[2].conf = map[string]any{"cores": 6, "memory_mb": 100}
	if err := store.ExecutionUpdateConfig(ctx, db, ids[2], horizon.ExecutionConfig{Parameters: rows[2].conf}, nil); err != nil {
		t.Fatal(err)
	}
	check("answers edited", 1)

	two := 2
	if _, err := store.StackUpdate(ctx, db, st.ID, store.StackPatch{TemplateVersion: &two}, 0); err != nil {
		t.Fatal(err)
	}
	check("upgraded", 2)
}

// costTemplate makes the template "cost" with costV1 as version 1 and costV2 as version 2, and
// returns its id and the parsed versions by number.
func costTemplate(t *testing.T, db *pgxpool.Pool) (uuid.UUID, map[int]*template.Definition) {
	t.Helper()
	ctx := context.Background()
	defs := map[int]*template.Definition{}
	var tmplID uuid.UUID
	for n, src := range []string{costV1, costV2} {
		def, err := template.Parse([]byte(src))
		if err != nil {
			t.Fatalf("parse version %d: %v", n+1, err)
		}
		defs[n+1] = def
		raw, err := json.Marshal(def)
		if err != nil {
			t.Fatal(err)
		}
		v := horizon.TemplateVersion{Definition: raw, DefinitionHash: src, JobCommits: map[string]string{"vm": "c", "plain": "c", "tool": "c"}, Modules: json.RawMessage(`{}`)}
		if n == 0 {
			tmpl, _, err := store.TemplateCreate(ctx, db, horizon.Template{Name: "cost", Active: true}, v)
			if err != nil {
				t.Fatal(err)
			}
			tmplID = tmpl.ID
		} else {
			v.TemplateID = tmplID
			if _, err := store.TemplateVersionCreate(ctx, db, v, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	return tmplID, defs
}

// TestKeptUsageIsTheSum holds the usage the database keeps per team and environment
// (team_usage) to the SUM of the costs of the executions that count (by quota_counts, the
// rule's one definition), after every kind of change of executions and stacks: written into a
// draft, deployed, answers edited, added, removing, removed, deleted, moved to another stack;
// a stack failed, upgraded (alone and with a change of state), moved to another environment
// or team, removing, removed, deleted; statements that change rows of several stacks at once.
func TestKeptUsageIsTheSum(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testkit.DB(t)
	tmplID, _ := costTemplate(t, db)
	var teams, envs []uuid.UUID
	for _, name := range []string{"a", "b"} {
		team, err := store.TeamCreate(ctx, db, "team-"+name)
		if err != nil {
			t.Fatal(err)
		}
		env, err := store.EnvironmentCreate(ctx, db, horizon.Environment{Name: "env-" + name})
		if err != nil {
			t.Fatal(err)
		}
		teams, envs = append(teams, team.ID), append(envs, env.ID)
	}
	newStack := func(name string, team, env uuid.UUID) uuid.UUID {
		st, err := store.StackCreate(ctx, db, horizon.Stack{TeamID: team, Name: name, EnvironmentID: env, TemplateID: tmplID, TemplateVersion: 1})
		if err != nil {
			t.Fatal(err)
		}
		return st.ID
	}
	a1, a2, b1 := newStack("a1", teams[0], envs[0]), newStack("a2", teams[0], envs[1]), newStack("b1", teams[1], envs[0])
	insert := func(stack uuid.UUID, job string, index int, params map[string]any) uuid.UUID {
		e, err := store.ExecutionInsert(ctx, db, horizon.Execution{StackID: stack, Job: job, Index: index, Commit: "c",
			Config: horizon.ExecutionConfig{Parameters: params}})
		if err != nil {
			t.Fatal(err)
		}
		return e.ID
	}
	check := func(stage string) {
		t.Helper()
		const kept = `SELECT team_id, environment_id, executions, machines, vcpus, memory_mib, disk_gib FROM team_usage
			WHERE (executions, machines, vcpus, memory_mib, disk_gib) <> (0, 0, 0, 0, 0) ORDER BY 1, 2`
		const sum = `SELECT s.team_id, s.environment_id, count(*), sum(x.machines)::bigint, sum(x.vcpus)::bigint,
			sum(x.memory_mib)::bigint, sum(x.disk_gib)::bigint
			FROM stacks s JOIN executions x ON x.stack_id = s.id WHERE quota_counts(s.state, x.state) GROUP BY 1, 2 ORDER BY 1, 2`
		read := func(q string) []string {
			rows, err := db.Query(ctx, q)
			if err != nil {
				t.Fatalf("%s: %v", stage, err)
			}
			defer rows.Close()
			var out []string
			for rows.Next() {
				var team, env uuid.UUID
				var n, m, v, mem, disk int64
				if err := rows.Scan(&team, &env, &n, &m, &v, &mem, &disk); err != nil {
					t.Fatalf("%s: %v", stage, err)
				}
				out = append(out, fmt.Sprintf("team %s env %s: %d executions, %d machines, %d vCPUs, %d MiB, %d GiB", team, env, n, m, v, mem, disk))
			}
			if err := rows.Err(); err != nil {
				t.Fatalf("%s: %v", stage, err)
			}
			return out
		}
		if diff := cmp.Diff(read(sum), read(kept)); diff != "" {
			t.Errorf("%s: team_usage is not the SUM (-sum +kept):\n%s", stage, diff)
		}
	}
	exec := func(stage, q string, args ...any) {
		t.Helper()
		if _, err := db.Exec(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", stage, err)
		}
		check(stage)
	}

	x0 := insert(a1, "vm", 0, map[string]any{"cores": 2, "memory_mb": 4096})
	insert(a1, "vm", 1, map[string]any{"cores": 2.5})
	insert(a1, "plain", 0, nil)
	insert(a1, "tool", 0, nil)
	insert(a2, "vm", 0, map[string]any{"cores": 4, "memory_mb": 512})
	insert(a2, "vm", 1, nil)
	insert(b1, "vm", 0, map[string]any{"cores": 8})
	check("drafts")
	exec("one stack deploying", `UPDATE stacks SET state = 'deploying' WHERE id = $1`, a1)
	exec("two stacks deployed in one statement", `UPDATE stacks SET state = 'deployed' WHERE id = ANY($1)`, []uuid.UUID{a2, b1})
	x3 := insert(a1, "vm", 3, map[string]any{"cores": 1, "memory_mb": 300})
	check("added to a counted stack")
	if err := store.ExecutionUpdateConfig(ctx, db, x0, horizon.ExecutionConfig{Parameters: map[string]any{"cores": 16, "memory_mb": 64}}, nil); err != nil {
		t.Fatal(err)
	}
	check("answers edited")
	exec("answers rewritten as they are", `UPDATE executions SET config = config, updated_at = now()`)
	if err := store.ExecutionSetState(ctx, db, x3, horizon.ExecutionState("removing")); err != nil {
		t.Fatal(err)
	}
	check("removing")
	if err := store.ExecutionSetState(ctx, db, x3, horizon.ExecutionState("removed")); err != nil {
		t.Fatal(err)
	}
	check("removed")
	exec("removed answers edited", `UPDATE executions SET config = '{"parameters": {"cores": 99}}' WHERE id = $1`, x3)
	exec("several stacks' executions removing in one statement", `UPDATE executions SET state = 'removing' WHERE index = 1`)
	exec("deleted", `DELETE FROM executions WHERE stack_id = $1 AND job = 'plain'`, a1)
	exec("moved to another stack", `UPDATE executions SET stack_id = $2, index = 7 WHERE stack_id = $1 AND job = 'vm' AND index = 0`, a1, a2)
	two := 2
	if _, err := store.StackUpdate(ctx, db, a2, store.StackPatch{TemplateVersion: &two}, 0); err != nil {
		t.Fatal(err)
	}
	check("upgraded")
	exec("downgraded and failed in one statement", `UPDATE stacks SET template_version = 1, state = 'failed' WHERE id = $1`, a2)
	exec("upgraded and drafted in one statement", `UPDATE stacks SET template_version = 2, state = 'draft' WHERE id = $1`, a2)
	exec("deployed again", `UPDATE stacks SET state = 'deployed' WHERE id = $1`, a2)
	exec("moved to another environment", `UPDATE stacks SET environment_id = $2 WHERE id = $1`, a1, envs[1])
	exec("moved to another team", `UPDATE stacks SET team_id = $2 WHERE id = $1`, a2, teams[1])
	exec("every stack removing", `UPDATE stacks SET state = 'removing'`)
	exec("one stack removed", `UPDATE stacks SET state = 'removed' WHERE id = $1`, a1)
	exec("a stack deleted with its executions", `DELETE FROM stacks WHERE id = $1`, b1)
	exec("every execution deleted", `DELETE FROM executions`)
}

// TestMigrationBackfillsCosts: executions written before their costs were kept get them from
// the migration that keeps them (its down and up both run here).
func TestMigrationBackfillsCosts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testkit.DB(t)
	var version int64 = -1
	files, err := fs.Glob(migrations.FS, "*_execution_costs.sql")
	if err != nil || len(files) != 1 {
		t.Fatalf("the costs' migration: %v %v", files, err)
	}
	if version, err = strconv.ParseInt(strings.SplitN(files[0], "_", 2)[0], 10, 64); err != nil {
		t.Fatal(err)
	}
	sqlDB := stdlib.OpenDBFromPool(db)
	defer sqlDB.Close()
	p, err := goose.NewProvider(goose.DialectPostgres, sqlDB, migrations.FS)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.DownTo(ctx, version-1); err != nil {
		t.Fatalf("down to %d: %v", version-1, err)
	}
	team, _ := seed(t, db, 2)
	if _, err := p.Up(ctx); err != nil {
		t.Fatalf("up: %v", err)
	}
	u, err := quota.Count(ctx, db, team, uuid.Nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := (horizon.Resources{Machines: 4, VCPUs: 8}); u.Total != want {
		t.Errorf("Count after the backfill %+v, want %+v", u.Total, want)
	}
}

// TestCountLeavesOutWhatDoesNotCount: drafts, removed stacks and destroyed executions count
// nothing; a removing execution counts until its destroy ends.
func TestCountLeavesOutWhatDoesNotCount(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testkit.DB(t)
	team, stacks := seed(t, db, 4)
	all := stacks
	for _, q := range []string{
		`UPDATE stacks SET state = 'draft' WHERE id = $1`,
		`UPDATE stacks SET state = 'removed' WHERE id = $1`,
		`UPDATE executions SET state = 'removed' WHERE stack_id = $1 AND index = 0`,
		`UPDATE executions SET state = 'removing' WHERE stack_id = $1 AND index = 0`,
	} {
		if _, err := db.Exec(ctx, q, stacks[0]); err != nil {
			t.Fatal(err)
		}
		stacks = stacks[1:]
	}
	u, err := quota.Count(ctx, db, team, uuid.Nil)
	if err != nil {
		t.Fatal(err)
	}
	// Left: the removing stack's two executions and the one left of the third: 3 machines of 2 vCPUs.
	if want := (horizon.Resources{Machines: 3, VCPUs: 6}); u.Total != want {
		t.Errorf("Count %+v, want %+v", u.Total, want)
	}

	// The preflight's read (the environment with the quota, one statement) counts the same
	// once the team has a quota, leaves out the stack changed, and counts nothing without one.
	var env uuid.UUID
	if err := db.QueryRow(ctx, `SELECT environment_id FROM stacks WHERE id = $1`, all[0]).Scan(&env); err != nil {
		t.Fatal(err)
	}
	if _, qe, err := store.EnvironmentWithQuota(ctx, db, env, team, uuid.Nil); err != nil || !qe.Quota.Unlimited() || qe.Used != (horizon.Resources{}) {
		t.Fatalf("no quota: %+v, %v", qe, err)
	}
	if _, err := db.Exec(ctx, `INSERT INTO team_quotas (team_id, machines) VALUES ($1, 10)`, team); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, `INSERT INTO team_environment_quotas (team_id, environment_id, vcpus) VALUES ($1, $2, 8)`, team, env); err != nil {
		t.Fatal(err)
	}
	for _, except := range []uuid.UUID{uuid.Nil, all[3]} { // all[3] counts: leaving it out changes the sum
		u, err := quota.Count(ctx, db, team, except)
		if err != nil {
			t.Fatal(err)
		}
		e, qe, err := store.EnvironmentWithQuota(ctx, db, env, team, except)
		if err != nil {
			t.Fatal(err)
		}
		if e.ID != env || qe.Used != u.Total || qe.UsedInEnvironment != u.Environments[env] ||
			*qe.Quota.Limits.Machines != 10 || *qe.Quota.Environments[env].VCPUs != 8 {
			t.Errorf("except %s: environment %s, %+v; Count %+v", except, e.ID, qe, u)
		}
	}
}

// seed makes a team with n deployed stacks of two machines of 2 vCPUs each, and returns the
// team and the stacks.
func seed(t *testing.T, db *pgxpool.Pool, n int) (uuid.UUID, []uuid.UUID) {
	t.Helper()
	ctx := context.Background()
	def, err := template.Parse([]byte(`name: two
phases:
  - name: one
    jobs:
      - name: vm
        source: { repo: https://git.example.org/vm.git, branch: main, path: vm }
        machine: true
        executions: { multiple: true, min: 1, max: 5 }
        resources: { cores: 2 }
`))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(def)
	tmpl, _, err := store.TemplateCreate(ctx, db, horizon.Template{Name: "two", Active: true},
		horizon.TemplateVersion{Definition: raw, DefinitionHash: "h", JobCommits: map[string]string{"vm": "c"}, Modules: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	team, err := store.TeamCreate(ctx, db, "team")
	if err != nil {
		t.Fatal(err)
	}
	env, err := store.EnvironmentCreate(ctx, db, horizon.Environment{Name: "env"})
	if err != nil {
		t.Fatal(err)
	}
	var out []uuid.UUID
	for i := range n {
		st, err := store.StackCreate(ctx, db, horizon.Stack{TeamID: team.ID, Name: "s" + string(rune('a'+i)), EnvironmentID: env.ID, TemplateID: tmpl.ID, TemplateVersion: 1})
		if err != nil {
			t.Fatal(err)
		}
		for k := range 2 {
			if _, err := store.ExecutionInsert(ctx, db, horizon.Execution{StackID: st.ID, Job: "vm", Index: k, Commit: "c"}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := db.Exec(ctx, `UPDATE stacks SET state = 'deployed' WHERE id = $1`, st.ID); err != nil {
			t.Fatal(err)
		}
		out = append(out, st.ID)
	}
	return team.ID, out
}
