package runs_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"
	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"horizon/functions/apitest"
	"horizon/functions/apitest/labtest"
	"horizon/shared/auth"
	"horizon/shared/events"
	"horizon/shared/gate"
	"horizon/shared/horizon"
	"horizon/shared/logstream"
	"horizon/shared/queue"
	"horizon/shared/store"
	"horizon/workers/runs"
	"horizon/workers/worker/workertest"
)

// deploy starts the deploy of a lab draft of a db and one app and returns its run.
func deploy(t *testing.T, l *labtest.Lab) (string, uuid.UUID) {
	t.Helper()
	stack := l.Draft("shop", 1)
	r := l.API.Do("POST", "/v1/stacks/"+stack+"/deploy", apitest.Req{Token: l.Member})
	if r.Status != 202 {
		t.Fatalf("deploy: %d %s", r.Status, r.Body)
	}
	return stack, uuid.MustParse(r.Map()["id"].(string))
}

func states(steps []horizon.Step) map[string]horizon.StepState {
	out := map[string]horizon.StepState{}
	for _, s := range steps {
		out[s.Job] = s.State
	}
	return out
}

func stackState(t *testing.T, l *labtest.Lab, stack string) horizon.StackState {
	t.Helper()
	s, err := store.StackGet(t.Context(), l.API.DB, auth.Scope{All: true}, uuid.MustParse(stack))
	if err != nil {
		t.Fatal(err)
	}
	return s.State
}

// waiting counts the tasks of type typ waiting for id: the one of their payload (a P) that of
// returns.
func waiting[P any](t *testing.T, k *workertest.Kinds, typ string, id uuid.UUID, of func(P) uuid.UUID) int {
	t.Helper()
	n := 0
	for _, task := range k.Enqueued(typ) {
		var p P
		if err := json.Unmarshal(task.Payload, &p); err != nil {
			t.Fatal(err)
		}
		if of(p) == id {
			n++
		}
	}
	return n
}

// stepTasks counts the step:run tasks waiting for step.
func stepTasks(t *testing.T, k *workertest.Kinds, step uuid.UUID) int {
	t.Helper()
	return waiting(t, k, queue.TypeStepRun, step, func(p queue.StepRun) uuid.UUID { return p.StepID })
}

// advances counts the run:advance tasks waiting for run.
func advances(t *testing.T, k *workertest.Kinds, run uuid.UUID) int {
	t.Helper()
	return waiting(t, k, queue.TypeRunAdvance, run, func(p queue.RunAdvance) uuid.UUID { return p.RunID })
}

// repairedTwice runs a reconcile pass, checks that it queued exactly one advance of run, and
// delivers that advance twice (the reconciler's delivery, then a duplicate).
func repairedTwice(t *testing.T, k *workertest.Kinds, run uuid.UUID) {
	t.Helper()
	before := advances(t, k, run)
	if err := k.Work(asynq.NewTask(queue.TypeReconcile, nil)); err != nil {
		t.Fatal(err)
	}
	if n := advances(t, k, run) - before; n != 1 {
		t.Fatalf("the reconciler queued %d advances of the run, want 1", n)
	}
	for range 2 {
		k.Advance(run)
	}
}

// TestAdvanceQueuesPhaseByPhase: run:advance queues the first phase's step (and its task)
// only, a duplicate delivery queues nothing twice, each step's end lets the next phase go, and
// the last advance ends the run and deploys the stack; one more after the end changes nothing.
func TestAdvanceQueuesPhaseByPhase(t *testing.T) {
	t.Parallel()
	l, k := kindsLab(t, labtest.Options{})
	stack, run := deploy(t, l)
	q := k.Queued(run)
	if len(q) != 1 || q[0].Job != "db" || states(k.Steps(run))["app"] != horizon.StepPending {
		t.Fatalf("first advance: queued %+v, states %v; want the db alone", q, states(k.Steps(run)))
	}
	if n := stepTasks(t, k, q[0].ID); n != 1 {
		t.Fatalf("%d step:run tasks for the db, want 1", n)
	}
	if again := k.Queued(run); len(again) != 1 || again[0].Attempt != q[0].Attempt || stepTasks(t, k, q[0].ID) != 1 {
		t.Fatalf("a duplicate advance: queued %+v, %d tasks; want the same attempt, one task", again, stepTasks(t, k, q[0].ID))
	}
	if st := stackState(t, l, stack); st != horizon.StackDeploying {
		t.Fatalf("stack %s while its run runs", st)
	}
	if err := k.Step(q[0]); err != nil {
		t.Fatal(err)
	}
	q = k.Queued(run)
	if len(q) != 1 || q[0].Job != "app" {
		t.Fatalf("after the db: queued %+v, want the app", q)
	}
	if err := k.Step(q[0]); err != nil {
		t.Fatal(err)
	}
	if q := k.Queued(run); len(q) != 0 {
		t.Fatalf("after the last phase: queued %+v", q)
	}
	r, err := store.RunGet(t.Context(), l.API.DB, run)
	if err != nil {
		t.Fatal(err)
	}
	if r.State != horizon.RunSucceeded || stackState(t, l, stack) != horizon.StackDeployed {
		t.Fatalf("run %s, stack %s; want succeeded and deployed", r.State, stackState(t, l, stack))
	}
	k.Advance(run)
	if after, _ := store.RunGet(t.Context(), l.API.DB, run); after.State != horizon.RunSucceeded || after.FinishedAt == nil || !after.FinishedAt.Equal(*r.FinishedAt) {
		t.Fatalf("an advance after the end changed the run: %+v", after)
	}
}

// TestAdvanceAfterAFailureHoldsTheLaterPhases: the db's apply failed; the advance holds the
// app, fails the run with the step's first error line, named, and the stack with it.
func TestAdvanceAfterAFailureHoldsTheLaterPhases(t *testing.T) {
	t.Parallel()
	l, k := kindsLab(t, labtest.Options{})
	stack, run := deploy(t, l)
	q := k.Queued(run)
	l.Sandbox.FailNext("POST /nodes/{node}/qemu", 1, 500, "storage 'local-lvm' has not enough free space")
	if err := k.Step(q[0]); err != nil {
		t.Fatal(err)
	}
	if q := k.Queued(run); len(q) != 0 {
		t.Fatalf("after a failed phase the advance queued %+v", q)
	}
	if st := states(k.Steps(run)); st["db"] != horizon.StepFailed || st["app"] != horizon.StepHeld {
		t.Fatalf("steps %v, want db failed, app held", st)
	}
	r, err := store.RunGet(t.Context(), l.API.DB, run)
	if err != nil {
		t.Fatal(err)
	}
	if r.State != horizon.RunFailed || !strings.HasPrefix(deref(r.Error), "db[0]: ") || stackState(t, l, stack) != horizon.StackFailed {
		t.Fatalf("run %s (%q), stack %s; want failed with db[0]'s error, stack failed", r.State, deref(r.Error), stackState(t, l, stack))
	}
}

// TestAdvanceOfACancelingRunCancelsWhatHasNotStarted: the user cancels while the db's step
// waits in the queue; the advance cancels it and the app's, ends the run canceled and the
// stack failed, and the step's late delivery does nothing.
func TestAdvanceOfACancelingRunCancelsWhatHasNotStarted(t *testing.T) {
	t.Parallel()
	l, k := kindsLab(t, labtest.Options{})
	stack, run := deploy(t, l)
	q := k.Queued(run)
	if r := l.API.Do("POST", "/v1/stacks/"+stack+"/cancel", apitest.Req{Token: l.Member}); r.Status != 202 {
		t.Fatalf("cancel: %d %s", r.Status, r.Body)
	}
	k.Advance(run)
	if st := states(k.Steps(run)); st["db"] != horizon.StepCanceled || st["app"] != horizon.StepCanceled {
		t.Fatalf("steps %v, want both canceled", st)
	}
	r, err := store.RunGet(t.Context(), l.API.DB, run)
	if err != nil {
		t.Fatal(err)
	}
	if r.State != horizon.RunCanceled || stackState(t, l, stack) != horizon.StackFailed {
		t.Fatalf("run %s, stack %s; want canceled and failed", r.State, stackState(t, l, stack))
	}
	if err := k.Step(q[0]); err != nil {
		t.Fatal(err)
	}
	if s := k.StepNow(q[0].ID); s.State != horizon.StepCanceled || len(l.Sandbox.Cluster("demo").VMs()) != 0 {
		t.Fatalf("the canceled step's delivery ran: %s, VMs %+v", s.State, l.Sandbox.Cluster("demo").VMs())
	}
}

// TestAdvanceOfAnUnknownRunIsNotRetried: a run:advance for a run that does not exist is
// dropped (Asynq's SkipRetry), not retried ten times.
func TestAdvanceOfAnUnknownRunIsNotRetried(t *testing.T) {
	t.Parallel()
	_, k := kindsLab(t, labtest.Options{})
	err := k.Work(queue.NewRunAdvance(k.Queues, uuid.New()))
	if !errors.Is(err, horizon.ErrNotFound) || !errors.Is(err, asynq.SkipRetry) {
		t.Fatalf("advance of an unknown run: %v, want not found and SkipRetry", err)
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// lostLine is the line a dead writer streamed and never stored (streamedThenDied).
const lostLine = "streamed by a worker since killed"

// streamedThenDied deploys a lab draft to its end, a worker having streamed lostLine for the
// app's step and been killed before storing it; it returns the run, its log client and the
// line's stream id.
func streamedThenDied(t *testing.T) (*labtest.Lab, *workertest.Kinds, uuid.UUID, *logstream.Client, string) {
	t.Helper()
	l, k := kindsLab(t, labtest.Options{})
	_, run := deploy(t, l)
	if err := k.Step(k.Queued(run)[0]); err != nil {
		t.Fatal(err)
	}
	app := k.Queued(run)[0]
	logs := logstream.New(l.API.Redis, l.API.DB, logstream.Config{Prefix: l.API.Deps.Namespace})
	id, err := l.API.Redis.XAdd(t.Context(), &redis.XAddArgs{Stream: logs.Key(run), Values: []string{"step", app.ID.String(), "job", app.Job,
		"execution", "0", "fd", "stdout", "ts", strconv.FormatInt(time.Now().UnixMicro(), 10), "text", lostLine}}).Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Step(app); err != nil {
		t.Fatal(err)
	}
	k.Advance(run)
	return l, k, run, logs, id
}

// TestAdvanceStoresWhatADeadWriterStreamed: a worker streamed a line of the app's step and was
// killed before storing it; when the run ends, the line followers saw is in the durable log,
// under its stream id.
func TestAdvanceStoresWhatADeadWriterStreamed(t *testing.T) {
	t.Parallel()
	l, _, run, _, id := streamedThenDied(t)
	if r, err := store.RunGet(t.Context(), l.API.DB, run); err != nil || r.State != horizon.RunSucceeded {
		t.Fatalf("run %+v (%v), want succeeded", r, err)
	}
	ms, seq, _ := strings.Cut(id, "-")
	var text string
	if err := l.API.DB.QueryRow(t.Context(), `SELECT text FROM log_lines WHERE run_id = $1 AND stream_ms = $2 AND stream_seq = $3`,
		run, ms, seq).Scan(&text); err != nil || text != lostLine {
		t.Fatalf("the streamed line in log_lines: %q (%v)", text, err)
	}
}

// TestReconcileEndsTheLogOfARunThatEndedWithoutIt: the worker that finished a run died between
// the commit and the end of its log (or a store was down then): a line its step's writer
// streamed is not stored, the log has no end in Postgres or Redis. The reconciler's next pass
// (once the run is LogEndGrace old) advances the run again, which stores the line and ends the
// log; a further advance changes nothing.
func TestReconcileEndsTheLogOfARunThatEndedWithoutIt(t *testing.T) {
	t.Parallel()
	l, k, run, logs, _ := streamedThenDied(t)

	// What the crash leaves: the run finished a while ago, the line and the end never written.
	db := l.API.DB
	for _, q := range []string{`DELETE FROM log_ends WHERE run_id = $1`, `DELETE FROM log_lines WHERE run_id = $1 AND text = '` + lostLine + `'`,
		`UPDATE runs SET finished_at = now() - interval '1 minute' WHERE id = $1`} {
		if _, err := db.Exec(t.Context(), q, run); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := l.API.Redis.XRange(t.Context(), logs.Key(run), "-", "+").Result()
	if err != nil || len(entries) == 0 || entries[len(entries)-1].Values["type"] != "eof" {
		t.Fatalf("the stream's last entry is not its end: %v (%v)", entries, err)
	}
	if err := l.API.Redis.XDel(t.Context(), logs.Key(run), entries[len(entries)-1].ID).Err(); err != nil {
		t.Fatal(err)
	}

	repairedTwice(t, k, run) // the steps' ends queued advances already
	var stored, ends int
	if err := db.QueryRow(t.Context(), `SELECT (SELECT count(*) FROM log_lines WHERE run_id = $1 AND text = $2),
		(SELECT count(*) FROM log_ends WHERE run_id = $1)`, run, lostLine).Scan(&stored, &ends); err != nil {
		t.Fatal(err)
	}
	if stored != 1 || ends != 1 {
		t.Fatalf("after the reconciler: the streamed line stored %d times, log ends %d; want 1 and 1", stored, ends)
	}
	entries, _ = l.API.Redis.XRange(t.Context(), logs.Key(run), "-", "+").Result()
	eofs := 0
	for _, e := range entries {
		if e.Values["type"] == "eof" {
			eofs++
		}
	}
	if eofs != 1 {
		t.Fatalf("the stream has %d ends, want 1: its followers are told the run ended", eofs)
	}
}

// TestAdvanceLocksTheRunsOwnerBeforeTheRun: a transaction holds the stack's row, as the API's
// cancel does before it locks the stack's run. The advance that ends the canceled run waits for
// the stack without holding the run: the holder can still lock the run, so the two never
// deadlock (the advance took the run first once, and a cancel then failed with a 500).
func TestAdvanceLocksTheRunsOwnerBeforeTheRun(t *testing.T) {
	t.Parallel()
	l, k := kindsLab(t, labtest.Options{})
	stack, run := deploy(t, l)
	if r := l.API.Do("POST", "/v1/stacks/"+stack+"/cancel", apitest.Req{Token: l.Member}); r.Status != 202 {
		t.Fatalf("cancel: %d %s", r.Status, r.Body)
	}
	advanceWaitsForTheOwnerOnly(t, l, k, run, func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `SELECT 1 FROM stacks WHERE id = $1 FOR UPDATE`, stack) // as the cancel does
		return err
	})
}

// advanceWaitsForTheOwnerOnly holds the canceled run's owner in a transaction (lockOwner), lets
// the advance that ends the run start and wait for it, and checks that the waiting advance
// does not hold the run; once the owner is released the run ends canceled.
func advanceWaitsForTheOwnerOnly(t *testing.T, l *labtest.Lab, k *workertest.Kinds, run uuid.UUID, lockOwner func(context.Context, pgx.Tx) error) {
	t.Helper()
	ctx := t.Context()
	tx, err := l.API.DB.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if err := lockOwner(ctx, tx); err != nil {
		t.Fatal(err)
	}
	advanced := make(chan error, 1)
	go func() { advanced <- k.Work(queue.NewRunAdvance(k.Queues, run)) }()
	for waiting := 0; waiting == 0; {
		select {
		case err := <-advanced:
			t.Fatalf("the advance ended (%v) while the run's owner was locked", err)
		case <-time.After(10 * time.Millisecond):
		}
		if err := l.API.DB.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tx.Exec(ctx, `SELECT 1 FROM runs WHERE id = $1 FOR UPDATE NOWAIT`, run); err != nil {
		t.Fatalf("the waiting advance holds the run: %v", err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-advanced; err != nil {
		t.Fatal(err)
	}
	if r, err := store.RunGet(ctx, l.API.DB, run); err != nil || r.State != horizon.RunCanceled {
		t.Fatalf("run %s (%v), want canceled", r.State, err)
	}
}

// buildISO registers a cloud-image ISO template whose VM ids are vmid and vmid+101 and starts
// building it on the sandbox's pve1; it returns the ISO and its build run, queued. Its image
// is never fetched: these tests advance the run, they do not run its steps.
func buildISO(t *testing.T, l *labtest.Lab, vmid int) (string, uuid.UUID) {
	t.Helper()
	tmpl := l.API.Do("POST", "/v1/iso-templates", apitest.Req{Body: map[string]any{"name": "noble-" + strconv.Itoa(vmid), "kind": "cloud-image",
		"spec": map[string]any{
			"source":     map[string]any{"url": "https://images.example.org/noble.img", "checksum": strings.Repeat("0123456789abcdef", 4)},
			"storage":    "local",
			"vm":         map[string]any{"vmid": vmid, "name": "noble", "disk": map[string]any{"storage": "local-lvm"}, "network": map[string]any{}},
			"cloud_init": map[string]any{"ssh_authorized_keys": []string{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl ana@laptop"}},
			"clones":     []any{map[string]any{"name": "web-1", "vmid": vmid + 101}},
		}}})
	if tmpl.Status != 201 {
		t.Fatalf("ISO template: %d %s", tmpl.Status, tmpl.Body)
	}
	r := l.API.Do("POST", "/v1/isos", apitest.Req{Body: map[string]any{"iso_template_id": tmpl.Map()["id"], "proxmox_server_id": l.Server, "node": "pve1"}})
	if r.Status != 202 {
		t.Fatalf("build: %d %s", r.Status, r.Body)
	}
	iso := r.Map()
	return iso["id"].(string), uuid.MustParse(iso["last_run"].(map[string]any)["id"].(string))
}

// TestAdvanceLocksTheISOBeforeItsRun is TestAdvanceLocksTheRunsOwnerBeforeTheRun for an ISO's
// run: a transaction holds the ISO's row, as the API's ISO cancel does before it locks the
// ISO's run. The advance that ends the canceled run waits for the ISO without holding the run,
// so the holder can still lock the run. Were the advance to take the run first (or not lock
// the ISO, and meet its row only when it moves the ISO to failed), an ISO cancel racing the
// end of a build would deadlock with it, and one of the two would fail.
func TestAdvanceLocksTheISOBeforeItsRun(t *testing.T) {
	t.Parallel()
	l, k := kindsLab(t, labtest.Options{})
	iso, run := buildISO(t, l, 9000)
	if r := l.API.Do("POST", "/v1/isos/"+iso+"/cancel", apitest.Req{}); r.Status != 202 {
		t.Fatalf("cancel: %d %s", r.Status, r.Body)
	}
	advanceWaitsForTheOwnerOnly(t, l, k, run, func(ctx context.Context, tx pgx.Tx) error {
		_, err := store.ISOGetForUpdate(ctx, tx, uuid.MustParse(iso)) // what the ISO cancel locks first
		return err
	})
	ctx := t.Context()
	var state string
	if err := l.API.DB.QueryRow(ctx, `SELECT state FROM isos WHERE id = $1`, iso).Scan(&state); err != nil || state != string(horizon.ISOFailed) {
		t.Fatalf("ISO %s (%v), want failed", state, err)
	}
}

// runLevelLines returns the texts of run's lines of no step that Horizon wrote (an ISO run's
// summary), in order: as log_lines stores them, and as its stream holds them.
func runLevelLines(t *testing.T, l *labtest.Lab, logs *logstream.Client, run uuid.UUID) (stored, streamed []string) {
	t.Helper()
	rows, err := l.API.DB.Query(t.Context(), `SELECT text FROM log_lines WHERE run_id = $1 AND step_id IS NULL AND fd = 'horizon'
		ORDER BY stream_ms, stream_seq`, run)
	if err != nil {
		t.Fatal(err)
	}
	if stored, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		t.Fatal(err)
	}
	entries, err := l.API.Redis.XRange(t.Context(), logs.Key(run), "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Values["type"] == nil && e.Values["step"] == "" && e.Values["fd"] == "horizon" {
			streamed = append(streamed, e.Values["text"].(string))
		}
	}
	return stored, streamed
}

// TestTheRepairedLogEndOfAnISORunHasItsSummaryOnce: the advance that ended an ISO's run wrote
// the run's summary and died before the end of the log (or a store was down then): the
// summary written whole, only streamed (its writer died before storing it), or half written.
// The reconciler's repair ends the log, and the log has the summary once, whole and in order,
// stored and streamed. It used to write the summary again in every case, so that the log a
// user reads, live or downloaded, ended with two summaries of the run.
func TestTheRepairedLogEndOfAnISORunHasItsSummaryOnce(t *testing.T) {
	t.Parallel()
	l, k := kindsLab(t, labtest.Options{})
	ctx, db := t.Context(), l.API.DB
	logs := logstream.New(l.API.Redis, db, logstream.Config{Prefix: l.API.Deps.Namespace})
	for i, c := range []struct {
		name string
		// lost is how many of the summary's last lines the dead advance never wrote; stored,
		// whether it stored those it streamed.
		lost   func(summary []string) int
		stored bool
	}{
		{"written", func([]string) int { return 0 }, true},
		{"streamed only", func([]string) int { return 0 }, false},
		{"half written", func(s []string) int { return len(s) / 2 }, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			iso, run := buildISO(t, l, 9000+10*i)
			if r := l.API.Do("POST", "/v1/isos/"+iso+"/cancel", apitest.Req{}); r.Status != 202 {
				t.Fatalf("cancel: %d %s", r.Status, r.Body)
			}
			k.Advance(run)
			summary, streamed := runLevelLines(t, l, logs, run)
			if len(summary) < 2 || !strings.HasPrefix(summary[0], "summary: build canceled") || !slices.Equal(streamed, summary) {
				t.Fatalf("the run's end wrote the summary %q, streamed %q", summary, streamed)
			}

			// What the crash leaves: the run finished a while ago, the log has no end, and the
			// summary is there as far as the dead advance wrote it.
			lost := c.lost(summary)
			entries, err := l.API.Redis.XRange(ctx, logs.Key(run), "-", "+").Result()
			if err != nil || len(entries) < lost+1 || entries[len(entries)-1].Values["type"] != "eof" {
				t.Fatalf("the stream's last entries are not the summary and its end: %v (%v)", entries, err)
			}
			var drop []string
			for _, e := range entries[len(entries)-1-lost:] {
				drop = append(drop, e.ID)
			}
			if err := l.API.Redis.XDel(ctx, logs.Key(run), drop...).Err(); err != nil {
				t.Fatal(err)
			}
			if _, err := db.Exec(ctx, `DELETE FROM log_lines WHERE run_id = $1 AND step_id IS NULL AND fd = 'horizon'
				AND (NOT $2 OR (stream_ms, stream_seq) IN (SELECT stream_ms, stream_seq FROM log_lines WHERE run_id = $1
					ORDER BY stream_ms DESC, stream_seq DESC LIMIT $3))`, run, c.stored, lost); err != nil {
				t.Fatal(err)
			}
			for _, q := range []string{`DELETE FROM log_ends WHERE run_id = $1`, `UPDATE runs SET finished_at = now() - interval '1 minute' WHERE id = $1`} {
				if _, err := db.Exec(ctx, q, run); err != nil {
					t.Fatal(err)
				}
			}

			repairedTwice(t, k, run)
			stored, streamed := runLevelLines(t, l, logs, run)
			if !slices.Equal(stored, summary) {
				t.Errorf("stored after the repair:\n%s\nwant the summary once:\n%s", strings.Join(stored, "\n"), strings.Join(summary, "\n"))
			}
			if !slices.Equal(streamed, summary) {
				t.Errorf("streamed after the repair:\n%s\nwant the summary once:\n%s", strings.Join(streamed, "\n"), strings.Join(summary, "\n"))
			}
			var ends int
			if err := db.QueryRow(ctx, `SELECT count(*) FROM log_ends WHERE run_id = $1`, run).Scan(&ends); err != nil || ends != 1 {
				t.Fatalf("log ends %d (%v), want 1", ends, err)
			}
		})
	}
}

// TestARunAdvanceDeliversAgainAQueuedStepWhoseTaskWasLost: a step queued by an advance whose
// task never reached Redis (Redis down after the commit) or was lost by it (a failover) is
// delivered again, at the same attempt, by the next run:advance (the reconciler's): not left
// to go stale and be given a new attempt. A step whose task is still there gets no second one.
func TestARunAdvanceDeliversAgainAQueuedStepWhoseTaskWasLost(t *testing.T) {
	t.Parallel()
	l, k := kindsLab(t, labtest.Options{})
	_, run := deploy(t, l)
	q := k.Queued(run)
	if len(q) != 1 || stepTasks(t, k, q[0].ID) != 1 {
		t.Fatalf("first advance: queued %+v", q)
	}
	inspector := asynq.NewInspectorFromRedisClient(l.API.Redis)
	if err := inspector.DeleteTask(k.Queues.Build, queue.StepTaskID(q[0].ID, q[0].Attempt)); err != nil {
		t.Fatal(err)
	}
	if n := stepTasks(t, k, q[0].ID); n != 0 {
		t.Fatalf("%d tasks after the loss", n)
	}
	for range 2 {
		k.Advance(run)
		if n := stepTasks(t, k, q[0].ID); n != 1 {
			t.Fatalf("%d tasks for the db after a run:advance, want 1", n)
		}
	}
	if s := k.StepNow(q[0].ID); s.State != horizon.StepQueued || s.Attempt != q[0].Attempt {
		t.Fatalf("step %s at attempt %d, want queued at attempt %d", s.State, s.Attempt, q[0].Attempt)
	}
	if err := k.Step(q[0]); err != nil || k.StepNow(q[0].ID).State != horizon.StepSucceeded {
		t.Fatalf("the delivered attempt: %v, %s", err, k.StepNow(q[0].ID).State)
	}
}

// TestAnAdvanceThatCannotDeliverItsStepsSaysSo: an advance that committed a step as queued and
// could not hand its task to Redis returns runs.ErrNotDelivered, so that the attempt that ran it
// in process hands the run to run:advance, which delivers the step again.
func TestAnAdvanceThatCannotDeliverItsStepsSaysSo(t *testing.T) {
	t.Parallel()
	l, k := kindsLab(t, labtest.Options{})
	_, run := deploy(t, l)
	down := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	t.Cleanup(func() { _ = down.Close() })
	g, err := gate.New(l.API.Redis, gate.Config{Prefix: l.API.Deps.Namespace})
	if err != nil {
		t.Fatal(err)
	}
	a := runs.Advancer{DB: l.API.DB, Queues: k.Queues, Enqueue: queue.Enqueuer{Client: asynq.NewClientFromRedisClient(down)},
		Gate: g, Events: events.NewPublisher(l.API.Redis, events.Config{Prefix: l.API.Deps.Namespace}),
		Logs: logstream.New(l.API.Redis, l.API.DB, logstream.Config{Prefix: l.API.Deps.Namespace}), Log: slog.New(slog.DiscardHandler)}
	if err := a.Advance(t.Context(), run); !errors.Is(err, runs.ErrNotDelivered) {
		t.Fatalf("advance with Redis down: %v, want ErrNotDelivered", err)
	}
	q := k.Steps(run)
	db := q[slices.IndexFunc(q, func(s horizon.Step) bool { return s.Job == "db" })]
	if db.State != horizon.StepQueued || stepTasks(t, k, db.ID) != 0 {
		t.Fatalf("db %s with %d tasks, want queued with none", db.State, stepTasks(t, k, db.ID))
	}
	k.Advance(run)
	if n := stepTasks(t, k, db.ID); n != 1 || k.StepNow(db.ID).Attempt != db.Attempt {
		t.Fatalf("after run:advance: %d tasks, attempt %d; want one at attempt %d", n, k.StepNow(db.ID).Attempt, db.Attempt)
	}
}

// TestTwoStepsOfAPhaseEndingAtOnceEndTheRunOnce: the two app machines of the last phase end at
// the same moment on two workers, and each worker advances the run in process. The run's row
// lock orders the two advances: the run succeeds once, the stack is deployed, the log has one
// end, and neither worker needed run:advance.
func TestTwoStepsOfAPhaseEndingAtOnceEndTheRunOnce(t *testing.T) {
	t.Parallel()
	l, k := kindsLab(t, labtest.Options{})
	d := l.API.Deps
	other := workertest.NewKinds(t, workertest.Deps{DB: d.DB, Redis: d.Redis, Box: d.Box, Namespace: d.Namespace}, workertest.Options{})
	stack := l.Draft("shop", 2)
	r := l.API.Do("POST", "/v1/stacks/"+stack+"/deploy", apitest.Req{Token: l.Member})
	if r.Status != 202 {
		t.Fatalf("deploy: %d %s", r.Status, r.Body)
	}
	run := uuid.MustParse(r.Map()["id"].(string))
	if err := k.Step(k.Queued(run)[0]); err != nil {
		t.Fatal(err)
	}
	apps := k.Queued(run)
	if len(apps) != 2 {
		t.Fatalf("queued after the db: %+v, want the two apps", apps)
	}
	advancesBefore := advances(t, k, run)
	errs := make(chan error, 2)
	for i, w := range []*workertest.Kinds{k, other} {
		go func() { errs <- w.Step(apps[i]) }()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	run2, err := store.RunGet(t.Context(), l.API.DB, run)
	if err != nil {
		t.Fatal(err)
	}
	if run2.State != horizon.RunSucceeded || stackState(t, l, stack) != horizon.StackDeployed {
		t.Fatalf("run %s, stack %s; want succeeded and deployed", run2.State, stackState(t, l, stack))
	}
	if n := advances(t, k, run) - advancesBefore; n != 0 {
		t.Fatalf("%d run:advance tasks queued, want none: both advanced in process", n)
	}
	logs := logstream.New(l.API.Redis, l.API.DB, logstream.Config{Prefix: d.Namespace})
	entries, err := l.API.Redis.XRange(t.Context(), logs.Key(run), "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	eofs := 0
	for _, e := range entries {
		if e.Values["type"] == "eof" {
			eofs++
		}
	}
	var ends int
	if err := l.API.DB.QueryRow(t.Context(), `SELECT count(*) FROM log_ends WHERE run_id = $1`, run).Scan(&ends); err != nil {
		t.Fatal(err)
	}
	if eofs != 1 || ends != 1 {
		t.Fatalf("the log has %d ends in its stream and %d stored, want one of each", eofs, ends)
	}
}

// TestAnApplyQueuedBehindAnotherReadsNothingUntilItIsNext: two stacks' databases are queued on
// one node at once. The second cannot build before the first, and its work cannot turn out
// unneeded (a plain apply), so the advance registers it as having asked: its first delivery is
// refused by the gate before it reads anything. At 200 deploys at once, reading every step's
// work in that first burst delayed the hand-offs of the builds already running by seconds.
func TestAnApplyQueuedBehindAnotherReadsNothingUntilItIsNext(t *testing.T) {
	t.Parallel()
	l, k := kindsLab(t, labtest.Options{})
	_, first := deploy(t, l)
	r := l.API.Do("POST", "/v1/stacks", apitest.Req{Token: l.Member, Body: map[string]any{"team_id": l.Team, "name": "other",
		"environment_id": l.Env, "template_id": l.Tmpl, "template_version": 1,
		"jobs": map[string]any{"db": map[string]any{"executions": []any{l.Machine(5, nil)}},
			"app": map[string]any{"executions": []any{l.Machine(6, map[string]any{"node": "pve2"})}}}}})
	if r.Status != 201 {
		t.Fatalf("draft: %d %s", r.Status, r.Body)
	}
	d := l.API.Do("POST", "/v1/stacks/"+r.Map()["id"].(string)+"/deploy", apitest.Req{Token: l.Member})
	if d.Status != 202 {
		t.Fatalf("deploy: %d %s", d.Status, d.Body)
	}
	second := uuid.MustParse(d.Map()["id"].(string))
	a, b := k.Queued(first)[0], k.Queued(second)[0]
	if *a.Node != *b.Node || a.MayBeUnneeded() || b.MayBeUnneeded() {
		t.Fatalf("the databases: %+v, %+v; want plain applies on one node", a, b)
	}
	g, err := gate.New(l.API.Redis, gate.Config{Prefix: l.API.Deps.Namespace})
	if err != nil {
		t.Fatal(err)
	}
	node := queue.GateNode(*b.ServerID, *b.Node)
	var busy *gate.BusyError
	if err := g.Behind(t.Context(), node, queue.StepTaskID(b.ID, b.Attempt)); !errors.As(err, &busy) || busy.Position != 2 {
		t.Fatalf("the second's first ask: %v, want refused at place 2 before it reads", err)
	}
	if err := g.Behind(t.Context(), node, queue.StepTaskID(a.ID, a.Attempt)); err != nil {
		t.Fatalf("the first's first ask: %v, want to go on", err)
	}
	if err := k.Step(b); !gate.IsBusy(err) {
		t.Fatalf("the second's delivery: %v, want busy", err)
	}
	if err := k.Step(a); err != nil {
		t.Fatal(err)
	}
	if err := k.Step(b); err != nil || k.StepNow(b.ID).State != horizon.StepSucceeded {
		t.Fatalf("the second, next: %v, %s; want built", err, k.StepNow(b.ID).State)
	}
}
