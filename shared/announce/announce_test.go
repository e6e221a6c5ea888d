package announce_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"

	"horizon/shared/announce"
	"horizon/shared/events"
	"horizon/shared/queue"
	"horizon/shared/testkit"
)

// TestAChangeIsAnnouncedAfterItsRequestsDeadline: a request whose deadline passed between its
// commit and its announcement (a deploy that waited its turn under a burst of them) still
// enqueues the run's advance and publishes its events, instead of leaving the run for the
// reconciler's next pass.
func TestAChangeIsAnnouncedAfterItsRequestsDeadline(t *testing.T) {
	rdb, ns := testkit.Redis(t)
	queues := queue.Names(ns)
	client := asynq.NewClientFromRedisClient(rdb)
	pub := events.NewPublisher(rdb, events.Config{Prefix: ns})
	a := announce.Announcer{Events: pub, Redis: rdb, Enqueue: queue.Enqueuer{Client: client}, Queues: queues, Namespace: ns,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	expired, cancel := context.WithCancel(t.Context())
	cancel()
	run, stack, team := uuid.New(), uuid.New(), uuid.New()
	a.Changed(expired, run, events.Event{Type: events.Run, ID: run, RunID: run, StackID: stack, TeamID: team, State: "queued"})
	a.Canceling(expired, run, events.Event{Type: events.Run, ID: run, RunID: run, StackID: stack, TeamID: team, State: "canceling"})

	tasks, err := asynq.NewInspectorFromRedisClient(rdb).ListPendingTasks(queues.Control)
	if err != nil {
		t.Fatal(err)
	}
	advances := 0
	for _, task := range tasks {
		var p queue.RunAdvance
		if task.Type == queue.TypeRunAdvance && json.Unmarshal(task.Payload, &p) == nil && p.RunID == run {
			advances++
		}
	}
	if advances != 2 {
		t.Fatalf("%d run:advance tasks of the run queued, want 2 (the change's and the cancel's)", advances)
	}
	n, err := rdb.XLen(t.Context(), ns+":events").Result() // events.Config.Prefix + ":events"
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Fatalf("%d events published, want 2", n)
	}
}
