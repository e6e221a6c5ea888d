package metrics_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"
	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"horizon/shared/horizon"
	"horizon/shared/logstream"
	"horizon/shared/metrics"
	"horizon/shared/queue"
	"horizon/shared/secrets"
	"horizon/shared/store"
	"horizon/shared/testkit"
)

// TestCollectorReportsWhatEveryProcessContributed records gate waits and writes log lines as
// workers do, queues tasks and starts a run, and reads it all back through the collector the
// API registers.
func TestCollectorReportsWhatEveryProcessContributed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testkit.DB(t)
	rdb, ns := testkit.Redis(t)
	rec := metrics.NewRecorder(rdb, ns)
	for _, d := range []time.Duration{50 * time.Millisecond, 3 * time.Second, 4 * time.Second, 2 * time.Hour} {
		if err := rec.GateWait(ctx, "srv/pve1", d); err != nil {
			t.Fatal(err)
		}
	}
	if err := rec.GateWait(ctx, "srv/pve2", 20*time.Second); err != nil {
		t.Fatal(err)
	}
	w := logstream.New(rdb, db, logstream.Config{Prefix: ns}).NewWriter(uuid.New(), uuid.New(), &secrets.Masker{})
	for range 1000 {
		if err := w.Line(uuid.Nil, "", 0, logstream.Stdout, "x"); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	queues := queue.Names(ns)
	opt := asynq.RedisClientOpt{Addr: rdb.Options().Addr, DB: rdb.Options().DB, Username: rdb.Options().Username, Password: rdb.Options().Password}
	client := asynq.NewClient(opt)
	defer client.Close()
	for range 3 {
		if _, err := client.Enqueue(asynq.NewTask("test:noop", nil, asynq.Queue(queues.Build))); err != nil {
			t.Fatal(err)
		}
	}
	stack := newStack(t, db)
	if _, _, err := store.RunInsertWithSteps(ctx, db, horizon.Run{StackID: &stack, Kind: horizon.RunDeploy}, []horizon.Step{
		{Phase: 0, PhaseName: "a", Job: "web", Kind: horizon.StepApply, State: horizon.StepQueued},
		{Phase: 0, PhaseName: "a", Job: "db", Kind: horizon.StepApply, State: horizon.StepQueued},
		{Phase: 1, PhaseName: "b", Job: "app", Kind: horizon.StepApply},
	}); err != nil {
		t.Fatal(err)
	}

	inspector := asynq.NewInspector(opt)
	defer inspector.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.NewCollector(rdb, ns, inspector, []string{queues.Control, queues.Build}, db, slog.New(slog.NewTextHandler(io.Discard, nil))))
	want := `
# HELP horizon_gate_wait_seconds How long builds waited for their node's build gate, from their step's readiness, per node (<server>/<node>).
# TYPE horizon_gate_wait_seconds histogram
horizon_gate_wait_seconds_bucket{node="srv/pve1",le="0.1"} 1
horizon_gate_wait_seconds_bucket{node="srv/pve1",le="1"} 1
horizon_gate_wait_seconds_bucket{node="srv/pve1",le="5"} 3
horizon_gate_wait_seconds_bucket{node="srv/pve1",le="15"} 3
horizon_gate_wait_seconds_bucket{node="srv/pve1",le="30"} 3
horizon_gate_wait_seconds_bucket{node="srv/pve1",le="60"} 3
horizon_gate_wait_seconds_bucket{node="srv/pve1",le="120"} 3
horizon_gate_wait_seconds_bucket{node="srv/pve1",le="300"} 3
horizon_gate_wait_seconds_bucket{node="srv/pve1",le="600"} 3
horizon_gate_wait_seconds_bucket{node="srv/pve1",le="1800"} 3
horizon_gate_wait_seconds_bucket{node="srv/pve1",le="3600"} 3
horizon_gate_wait_seconds_bucket{node="srv/pve1",le="+Inf"} 4
horizon_gate_wait_seconds_sum{node="srv/pve1"} 7207.05
horizon_gate_wait_seconds_count{node="srv/pve1"} 4
horizon_gate_wait_seconds_bucket{node="srv/pve2",le="0.1"} 0
horizon_gate_wait_seconds_bucket{node="srv/pve2",le="1"} 0
horizon_gate_wait_seconds_bucket{node="srv/pve2",le="5"} 0
horizon_gate_wait_seconds_bucket{node="srv/pve2",le="15"} 0
horizon_gate_wait_seconds_bucket{node="srv/pve2",le="30"} 1
horizon_gate_wait_seconds_bucket{node="srv/pve2",le="60"} 1
horizon_gate_wait_seconds_bucket{node="srv/pve2",le="120"} 1
horizon_gate_wait_seconds_bucket{node="srv/pve2",le="300"} 1
horizon_gate_wait_seconds_bucket{node="srv/pve2",le="600"} 1
horizon_gate_wait_seconds_bucket{node="srv/pve2",le="1800"} 1
horizon_gate_wait_seconds_bucket{node="srv/pve2",le="3600"} 1
horizon_gate_wait_seconds_bucket{node="srv/pve2",le="+Inf"} 1
horizon_gate_wait_seconds_sum{node="srv/pve2"} 20
horizon_gate_wait_seconds_count{node="srv/pve2"} 1
# HELP horizon_log_lines_total Deploy log lines added to the live log streams by all workers (rate() is lines written per second).
# TYPE horizon_log_lines_total counter
horizon_log_lines_total 1000
# HELP horizon_steps Steps of the runs in progress, by state.
# TYPE horizon_steps gauge
horizon_steps{state="canceled"} 0
horizon_steps{state="failed"} 0
horizon_steps{state="held"} 0
horizon_steps{state="pending"} 1
horizon_steps{state="queued"} 2
horizon_steps{state="running"} 0
horizon_steps{state="skipped"} 0
horizon_steps{state="succeeded"} 0
`
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	series := 0
	for _, mf := range mfs {
		switch mf.GetName() {
		case "horizon_gate_wait_seconds", "horizon_log_lines_total", "horizon_steps":
			if _, err := expfmt.MetricFamilyToText(&got, mf); err != nil {
				t.Fatal(err)
			}
		case "horizon_queue_tasks", "horizon_queue_latency_seconds":
			series += len(mf.GetMetric())
		}
	}
	if d := cmp.Diff(strings.TrimPrefix(want, "\n"), got.String()); d != "" {
		t.Fatalf("metrics (-want +got):\n%s", d)
	}
	if series != 2*5+2 {
		t.Fatalf("queue series: %d, want 5 states and a latency for each of 2 queues", series)
	}
	for _, mf := range mfs {
		if mf.GetName() != "horizon_queue_tasks" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["queue"] == queues.Build && labels["state"] == "pending" && m.GetGauge().GetValue() != 3 {
				t.Fatalf("pending build tasks: %v, want 3", m.GetGauge().GetValue())
			}
		}
	}
}

// newStack makes a draft stack with its team, environment and template.
func newStack(t *testing.T, db store.Querier) uuid.UUID {
	t.Helper()
	ctx := context.Background()
	team, err := store.TeamCreate(ctx, db, "team")
	if err != nil {
		t.Fatal(err)
	}
	env, err := store.EnvironmentCreate(ctx, db, horizon.Environment{Name: "env"})
	if err != nil {
		t.Fatal(err)
	}
	tmpl, _, err := store.TemplateCreate(ctx, db, horizon.Template{Name: "tmpl", Active: true}, horizon.TemplateVersion{
		Definition: []byte(`{"name":"t","phases":[]}`), DefinitionHash: "sha256:1", JobCommits: map[string]string{}, Modules: []byte(`{"jobs":{}}`)})
	if err != nil {
		t.Fatal(err)
	}
	s, err := store.StackCreate(ctx, db, horizon.Stack{TeamID: team.ID, Name: "s", EnvironmentID: env.ID, TemplateID: tmpl.ID, TemplateVersion: 1})
	if err != nil {
		t.Fatal(err)
	}
	return s.ID
}
