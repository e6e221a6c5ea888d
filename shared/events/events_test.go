package events_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"horizon/shared/events"
	"horizon/shared/rstream"
	"horizon/shared/rstream/rstreamtest"
	"horizon/shared/secrets"
	"horizon/shared/testkit"
)

type env struct {
	t   *testing.T
	rdb *redis.Client
	cfg events.Config
	pub *events.Publisher
}

func newEnv(t *testing.T, maxLen int64) *env {
	rdb, ns := testkit.Redis(t)
	cfg := events.Config{Prefix: ns, MaxLen: maxLen}
	return &env{t: t, rdb: rdb, cfg: cfg, pub: events.NewPublisher(rdb, cfg)}
}

func (e *env) hub(hcfg rstream.Config) *events.Hub {
	hcfg.Block = 100 * time.Millisecond
	rdb := redis.NewClient(e.rdb.Options())
	h := events.NewHub(rdb, e.cfg, hcfg)
	e.t.Cleanup(func() {
		h.Close()
		_ = rdb.Close() // nothing to flush on a reader's client
	})
	return h
}

func (e *env) publish(ev events.Event) rstream.ID {
	e.t.Helper()
	id, err := e.pub.Publish(context.Background(), ev)
	if err != nil {
		e.t.Fatalf("publish: %v", err)
	}
	return id
}

func stepEvent(team, stack uuid.UUID, state string) events.Event {
	two := 2
	return events.Event{Type: events.Step, ID: uuid.New(), StackID: stack, TeamID: team, RunID: uuid.New(),
		State: state, Job: "worker", Execution: &two}
}

func TestFollowFiltersBackfillAndLive(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 0)
	h := e.hub(rstream.Config{})
	teamA, teamB, stackA := uuid.New(), uuid.New(), uuid.New()
	start := e.publish(events.Event{Type: events.Stack, ID: stackA, StackID: stackA, TeamID: teamA, State: "draft"})
	var want []rstream.ID
	for i := range 20 {
		team := teamA
		if i%2 == 1 {
			team = teamB
		}
		id := e.publish(stepEvent(team, stackA, "running"))
		if team == teamA {
			want = append(want, id)
		}
	}
	mine := func(ev events.Event) bool { return ev.TeamID == teamA }
	sub := h.Subscribe(context.Background(), start, mine)
	defer sub.Close()
	got := rstreamtest.Take(t, sub, 10)
	testkit.Eventually(t, 5*time.Second, "follower live", func() bool { return h.Stats().Members == 1 })
	for i := range 10 {
		team := teamB
		if i%2 == 1 {
			team = teamA
		}
		id := e.publish(stepEvent(team, stackA, "succeeded"))
		if team == teamA {
			want = append(want, id)
		}
	}
	got = append(got, rstreamtest.Take(t, sub, 5)...)
	var gotIDs []rstream.ID
	for _, m := range got {
		if m.Kind != events.KindEvent || m.Event.TeamID != teamA {
			t.Fatalf("message %+v passed the filter", m)
		}
		var raw map[string]any
		if err := json.Unmarshal(m.Data, &raw); err != nil || raw["team_id"] != teamA.String() || raw["job"] != "worker" {
			t.Fatalf("data %s: %v", m.Data, err)
		}
		gotIDs = append(gotIDs, m.ID)
	}
	if d := cmp.Diff(want, gotIDs); d != "" {
		t.Fatalf("ids (-want +got):\n%s", d)
	}
}

func TestFollowWithoutIDStartsNowAndResumesExactly(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 0)
	h := e.hub(rstream.Config{})
	team, stack := uuid.New(), uuid.New()
	all := func(events.Event) bool { return true }
	for range 5 {
		e.publish(stepEvent(team, stack, "queued"))
	}
	sub := h.Subscribe(context.Background(), rstream.ID{}, all)
	defer sub.Close()
	testkit.Eventually(t, 5*time.Second, "follower live", func() bool { return h.Stats().Members == 1 })
	var ids []rstream.ID
	for range 30 {
		ids = append(ids, e.publish(stepEvent(team, stack, "running")))
	}
	if got := rstreamtest.Take(t, sub, 30); got[0].ID != ids[0] {
		t.Fatalf("first message %v, want the first event published after subscribing (%v)", got[0].ID, ids[0])
	}
	for i := range ids {
		s := h.Subscribe(context.Background(), ids[i], all)
		got := rstreamtest.Take(t, s, len(ids)-i-1)
		s.Close()
		for j, m := range got {
			if m.ID != ids[i+1+j] || m.Kind != events.KindEvent {
				t.Fatalf("resume from %d: message %d is %v %v, want %v", i, j, m.Kind, m.ID, ids[i+1+j])
			}
		}
	}
}

func TestResetBeyondRetention(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 10)
	h := e.hub(rstream.Config{})
	team, stack := uuid.New(), uuid.New()
	first := e.publish(stepEvent(team, stack, "queued"))
	for range 1000 {
		e.publish(stepEvent(team, stack, "running"))
	}
	sub := h.Subscribe(context.Background(), first, func(events.Event) bool { return true })
	defer sub.Close()
	reset := rstreamtest.Take(t, sub, 1)[0]
	last, err := e.rdb.XRevRangeN(context.Background(), e.cfg.Prefix+":events", "+", "-", 1).Result()
	if err != nil {
		t.Fatal(err)
	}
	if reset.Kind != events.KindReset || reset.ID.String() != last[0].ID {
		t.Fatalf("got %v %v, want a reset to the last id %s", reset.Kind, reset.ID, last[0].ID)
	}
	next := e.publish(stepEvent(team, stack, "succeeded"))
	if m := rstreamtest.Take(t, sub, 1)[0]; m.Kind != events.KindEvent || m.ID != next {
		t.Fatalf("after the reset got %v %v, want the next event %v", m.Kind, m.ID, next)
	}
	// An id from a stream Redis has since lost is as stale.
	future := rstream.ID{MS: next.MS + 1_000_000}
	other := h.Subscribe(context.Background(), future, func(events.Event) bool { return true })
	defer other.Close()
	if m := rstreamtest.Take(t, other, 1)[0]; m.Kind != events.KindReset || m.ID != next {
		t.Fatalf("from a future id got %v %v, want a reset to %v", m.Kind, m.ID, next)
	}
}

func TestSlowFollowerGetsLagging(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 0)
	h := e.hub(rstream.Config{Buffer: 8 << 10, Count: 10})
	team, stack := uuid.New(), uuid.New()
	// The stream is not empty when the follower joins, as in production: a follower without a
	// Last-Event-ID starts at its tail.
	tail := e.publish(stepEvent(team, stack, "queued"))
	slow := h.Subscribe(context.Background(), rstream.ID{}, func(events.Event) bool { return true })
	defer slow.Close()
	testkit.Eventually(t, 5*time.Second, "follower live", func() bool { return h.Stats().Members == 1 })
	for range 200 { // about 100 KiB: the 64 messages C holds, then the 8 KiB buffer overflow
		e.publish(stepEvent(team, stack, "running"))
	}
	testkit.Eventually(t, 5*time.Second, "slow follower dropped", func() bool { return h.Stats().Dropped == 1 })
	var got []events.Message
	for m := range slow.C {
		got = append(got, m)
	}
	if len(got) == 0 {
		t.Fatal("the slow follower got nothing, want a final lagging")
	}
	// Lagging names the last event delivered, or the tail it joined at when the burst filled
	// the buffer before anything was delivered (it happens under -race).
	last, resumeAt := got[len(got)-1], tail
	if len(got) > 1 {
		resumeAt = got[len(got)-2].ID
	}
	if last.Kind != events.KindLagging || slow.Err() != nil || last.ID != resumeAt {
		t.Fatalf("last of %d messages: %v %v (err %v), want lagging at %v", len(got), last.Kind, last.ID, slow.Err(), resumeAt)
	}
}

func TestPublishRefusesInvalidEventsAndMasksErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 0)
	team, stack := uuid.New(), uuid.New()
	for name, ev := range map[string]events.Event{
		"no type":         {ID: uuid.New(), StackID: stack, TeamID: team, State: "running"},
		"no team":         {Type: events.Run, ID: uuid.New(), StackID: stack, State: "running"},
		"free-text state": {Type: events.Run, ID: uuid.New(), StackID: stack, TeamID: team, State: "it broke: password=x"},
		"free-text job":   {Type: events.Step, ID: uuid.New(), StackID: stack, TeamID: team, State: "failed", Job: "a job with spaces"},
	} {
		if _, err := e.pub.Publish(context.Background(), ev); err == nil {
			t.Errorf("%s: published", name)
		}
	}
	if n, _ := e.rdb.Exists(context.Background(), e.cfg.Prefix+":events").Result(); n != 0 {
		t.Fatal("an invalid event reached Redis")
	}

	const secret = "hunter2-but-longer"
	m := &secrets.Masker{}
	m.Add(secret)
	long := strings.Repeat("é", events.MaxErrorLine)
	ev := stepEvent(team, stack, "failed")
	ev.Error = events.MaskError(m, "\n  apply failed: token "+base64.StdEncoding.EncodeToString([]byte(secret))+" refused  \nsecond line "+secret+"\n")
	e.publish(ev)
	ev2 := stepEvent(team, stack, "failed")
	ev2.Error = events.MaskError(m, long)
	e.publish(ev2)
	entries, err := e.rdb.XRange(context.Background(), e.cfg.Prefix+":events", "-", "+").Result()
	if err != nil || len(entries) != 2 {
		t.Fatalf("%d entries, %v", len(entries), err)
	}
	var got struct{ Error string }
	if err := json.Unmarshal([]byte(entries[0].Values["event"].(string)), &got); err != nil {
		t.Fatal(err)
	}
	if want := "apply failed: token " + secrets.Masked + " refused"; got.Error != want {
		t.Fatalf("error line %q, want %q", got.Error, want)
	}
	if err := json.Unmarshal([]byte(entries[1].Values["event"].(string)), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Error) > events.MaxErrorLine || !strings.HasPrefix(long, got.Error) || len(got.Error) < events.MaxErrorLine-1 {
		t.Fatalf("long error line cut to %d bytes, want at most %d on a rune boundary", len(got.Error), events.MaxErrorLine)
	}
}
