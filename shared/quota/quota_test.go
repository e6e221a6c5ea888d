package quota_test

import (
	"context"
	"encoding/json"
	"io/fs"
	"strconv"
	"strings"
	"testing"

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
