package gate_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"horizon/shared/gate"
	"horizon/shared/testkit"
)

// newGate returns a gate in a fresh namespace, and the namespace's client.
func newGate(t testing.TB, cfg gate.Config) (*gate.Gate, *redis.Client, string) {
	t.Helper()
	rdb, ns := testkit.Redis(t)
	cfg.Prefix = ns
	g, err := gate.New(rdb, cfg)
	if err != nil {
		t.Fatalf("new gate: %v", err)
	}
	return g, rdb, ns
}

func acquire(t testing.TB, g *gate.Gate, node, owner string) *gate.Lease {
	t.Helper()
	l, err := g.TryAcquire(context.Background(), node, owner)
	if err != nil {
		t.Fatalf("%s acquires %s: %v", owner, node, err)
	}
	return l
}

// busy asserts that owner's TryAcquire finds the gate busy, and returns the details.
func busy(t testing.TB, g *gate.Gate, node, owner string) *gate.BusyError {
	t.Helper()
	l, err := g.TryAcquire(context.Background(), node, owner)
	var be *gate.BusyError
	if !errors.As(err, &be) {
		if l != nil {
			_, _ = l.Release(context.Background())
		}
		t.Fatalf("%s acquires %s: got %v, want busy", owner, node, err)
	}
	if !gate.IsBusy(err) {
		t.Fatalf("IsBusy(%v) is false", err)
	}
	return be
}

func release(t testing.TB, l *gate.Lease) string {
	t.Helper()
	next, err := l.Release(context.Background())
	if err != nil {
		t.Fatalf("%s releases: %v", l.Owner(), err)
	}
	return next
}

// keepsHolding checks, for d, that owner stays the holder of node's gate (with a TTL shorter than
// d this shows the lease is being renewed).
func keepsHolding(t testing.TB, g *gate.Gate, node, owner string, d time.Duration) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for end := time.Now().Add(d); time.Now().Before(end); <-tick.C {
		st, err := g.Status(context.Background(), node)
		if err != nil {
			t.Fatalf("status: %v", err)
		}
		if st.Holder != owner {
			t.Fatalf("holder of %s is %q, want %s still holding", node, st.Holder, owner)
		}
	}
}

// interval is one build as the recorder saw it.
type interval struct {
	node       string
	start, end time.Time
	fence      int64
}

func TestMutualExclusionUnderConcurrency(t *testing.T) {
	t.Parallel()
	const workers, buildsPerNode = 8, 20
	nodes := []string{"pve-1", "pve-2", "pve-3"}
	g, _, _ := newGate(t, gate.Config{TTL: 5 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	type build struct{ node, owner string }
	queue := make(chan build, len(nodes)*buildsPerNode) // never full: each build is in it at most once
	for i := range buildsPerNode {
		for _, n := range nodes {
			queue <- build{n, fmt.Sprintf("%s-build-%02d", n, i)}
		}
	}
	var (
		mu        sync.Mutex
		intervals []interval
		built     sync.WaitGroup
		stopped   sync.WaitGroup
	)
	built.Add(len(nodes) * buildsPerNode)
	for range workers {
		stopped.Add(1)
		go func() {
			defer stopped.Done()
			for {
				var b build
				select {
				case <-ctx.Done():
					return
				case b = <-queue:
				}
				l, err := g.Acquire(ctx, b.node, b.owner, 200*time.Millisecond)
				if gate.IsBusy(err) {
					queue <- b // as Asynq would: retry later, take other work meanwhile
					select {
					case <-ctx.Done():
						return
					case <-time.After(time.Duration(1+rand.IntN(3)) * time.Millisecond): // simulated retry delay
					}
					continue
				}
				if err != nil {
					t.Errorf("acquire: %v", err)
					built.Done()
					continue
				}
				iv := interval{node: b.node, start: time.Now(), fence: l.Fence()}
				select {
				case <-l.Context().Done():
					t.Errorf("%s lost its lease: %v", b.owner, context.Cause(l.Context()))
				case <-time.After(2 * time.Millisecond): // the simulated build
				}
				iv.end = time.Now()
				mu.Lock()
				intervals = append(intervals, iv)
				mu.Unlock()
				if _, err := l.Release(ctx); err != nil {
					t.Errorf("release: %v", err)
				}
				built.Done()
			}
		}()
	}
	built.Wait()
	cancel()
	stopped.Wait()

	sort.Slice(intervals, func(i, j int) bool { return intervals[i].start.Before(intervals[j].start) })
	last := map[string]interval{}
	perNode := map[string]int{}
	for _, iv := range intervals {
		perNode[iv.node]++
		if prev, ok := last[iv.node]; ok {
			if iv.start.Before(prev.end) {
				t.Errorf("%s: build [%v, %v] overlaps [%v, %v]", iv.node, iv.start, iv.end, prev.start, prev.end)
			}
			if iv.fence <= prev.fence {
				t.Errorf("%s: fence %d after %d, want increasing", iv.node, iv.fence, prev.fence)
			}
		}
		last[iv.node] = iv
	}
	for _, n := range nodes {
		if perNode[n] != buildsPerNode {
			t.Errorf("%s: %d builds, want %d", n, perNode[n], buildsPerNode)
		}
	}
	// Different nodes must have built at the same time at least once.
	maxParallel, open := 0, []time.Time{}
	for _, iv := range intervals {
		open = slices.DeleteFunc(open, func(end time.Time) bool { return !end.After(iv.start) })
		open = append(open, iv.end)
		maxParallel = max(maxParallel, len(open))
	}
	if maxParallel < 2 {
		t.Errorf("at most %d node built at a time, want nodes in parallel", maxParallel)
	}
}

func TestFIFO(t *testing.T) {
	t.Parallel()

	t.Run("OrdersByReadyAtNotRegistration", func(t *testing.T) {
		t.Parallel()
		g, _, _ := newGate(t, gate.Config{})
		ctx := context.Background()
		holder := acquire(t, g, "pve-1", "holder")
		base := time.Now()
		for _, i := range []int{3, 1, 5, 2, 4} {
			if err := g.Enqueue(ctx, "pve-1", fmt.Sprintf("w%d", i), base.Add(time.Duration(i)*time.Millisecond), false); err != nil {
				t.Fatalf("enqueue: %v", err)
			}
		}
		waiting := []string{"w1", "w2", "w3", "w4", "w5"}
		for len(waiting) > 0 {
			head := waiting[0]
			// Everyone behind the head asks first, and is told where they stand.
			for i := len(waiting) - 1; i >= 1; i-- {
				be := busy(t, g, "pve-1", waiting[i])
				if be.Position != i+1 || be.Head != head || be.Holder != holder.Owner() {
					t.Errorf("%s: got %+v, want position %d behind %s, holder %s", waiting[i], be, i+1, head, holder.Owner())
				}
			}
			if next := release(t, holder); next != head {
				t.Fatalf("release: next is %q, want %q", next, head)
			}
			for i := len(waiting) - 1; i >= 1; i-- {
				if be := busy(t, g, "pve-1", waiting[i]); be.Holder != "" || be.Head != head || be.Position != i+1 {
					t.Errorf("%s at a free gate: got %+v, want position %d behind %s", waiting[i], be, i+1, head)
				}
			}
			holder = acquire(t, g, "pve-1", head)
			waiting = waiting[1:]
		}
		if next := release(t, holder); next != "" {
			t.Errorf("last release: next is %q, want none", next)
		}
	})

	t.Run("OrdersByFirstContactWithoutEnqueue", func(t *testing.T) {
		t.Parallel()
		g, _, _ := newGate(t, gate.Config{})
		holder := acquire(t, g, "pve-1", "holder")
		for i, w := range []string{"c", "a", "b"} {
			if be := busy(t, g, "pve-1", w); be.Position != i+1 {
				t.Errorf("%s: position %d, want %d", w, be.Position, i+1)
			}
		}
		var order []string
		for range 3 {
			next := release(t, holder)
			holder = acquire(t, g, "pve-1", next)
			order = append(order, next)
		}
		release(t, holder)
		if want := []string{"c", "a", "b"}; !slices.Equal(order, want) {
			t.Errorf("order %v, want %v", order, want)
		}
	})

	t.Run("NodesHaveSeparateLines", func(t *testing.T) {
		t.Parallel()
		g, _, _ := newGate(t, gate.Config{})
		a := acquire(t, g, "pve-1", "a")
		b := acquire(t, g, "pve-2", "b")
		release(t, a)
		release(t, b)
	})
}

func TestTryAcquire(t *testing.T) {
	t.Parallel()

	t.Run("HolderReacquiringRenews", func(t *testing.T) {
		t.Parallel()
		g, _, _ := newGate(t, gate.Config{TTL: 300 * time.Millisecond})
		first := acquire(t, g, "pve-1", "task-1")
		again := acquire(t, g, "pve-1", "task-1") // a re-delivered task
		if again.Fence() != first.Fence() || !again.Since().Equal(first.Since()) {
			t.Errorf("re-acquire: fence %d since %v, want %d since %v", again.Fence(), again.Since(), first.Fence(), first.Since())
		}
		st, err := g.Status(context.Background(), "pve-1")
		if err != nil {
			t.Fatalf("status: %v", err)
		}
		if st.Holder != "task-1" || len(st.Waiters) != 0 {
			t.Errorf("status %+v, want task-1 holding and no waiters", st)
		}
		release(t, again)
		select {
		case <-first.Context().Done():
		case <-time.After(5 * time.Second):
			t.Fatal("the other lease of the same owner did not end at its next renewal")
		}
	})

	t.Run("ReportsHolderSinceAndPosition", func(t *testing.T) {
		t.Parallel()
		g, _, _ := newGate(t, gate.Config{})
		before := time.Now()
		l := acquire(t, g, "pve-1", "holder")
		if l.Fence() < 1 || l.Since().Before(before.Add(-time.Minute)) || l.Since().After(time.Now().Add(time.Minute)) {
			t.Errorf("lease fence %d since %v, want a positive fence and about now", l.Fence(), l.Since())
		}
		busy(t, g, "pve-1", "first")
		be := busy(t, g, "pve-1", "second")
		if be.Node != "pve-1" || be.Holder != "holder" || !be.Since.Equal(l.Since()) || be.Position != 2 || be.Head != "first" {
			t.Errorf("got %+v, want pve-1 held by holder since %v, position 2 behind first", be, l.Since())
		}
		st, err := g.Status(context.Background(), "pve-1")
		if err != nil {
			t.Fatalf("status: %v", err)
		}
		var owners []string
		for _, w := range st.Waiters {
			owners = append(owners, w.Owner)
		}
		if st.Holder != "holder" || st.Fence != l.Fence() || !st.Since.Equal(l.Since()) || !slices.Equal(owners, []string{"first", "second"}) {
			t.Errorf("status %+v, want holder with fence %d, waiters [first second]", st, l.Fence())
		}
		release(t, l)
	})

	t.Run("RejectsBadNames", func(t *testing.T) {
		t.Parallel()
		g, _, _ := newGate(t, gate.Config{})
		for _, tc := range []struct{ node, owner string }{{"", "o"}, {"a{b}", "o"}, {"pve-1", ""}} {
			if _, err := g.TryAcquire(context.Background(), tc.node, tc.owner); err == nil || gate.IsBusy(err) {
				t.Errorf("node %q owner %q: got %v, want an error", tc.node, tc.owner, err)
			}
		}
	})

	t.Run("EnqueueIgnoresTheHolder", func(t *testing.T) {
		t.Parallel()
		g, _, _ := newGate(t, gate.Config{})
		l := acquire(t, g, "pve-1", "holder")
		if err := g.Enqueue(context.Background(), "pve-1", "holder", time.Now(), false); err != nil {
			t.Fatalf("enqueue: %v", err)
		}
		if next := release(t, l); next != "" {
			t.Errorf("release: next is %q, want none (the holder must not queue behind itself)", next)
		}
	})
}

func TestAcquire(t *testing.T) {
	t.Parallel()

	t.Run("FirstInLineWaitsForRelease", func(t *testing.T) {
		t.Parallel()
		g, _, _ := newGate(t, gate.Config{})
		holder := acquire(t, g, "pve-1", "holder")
		busy(t, g, "pve-1", "next") // in line, first
		got := make(chan error, 1)
		go func() {
			l, err := g.Acquire(context.Background(), "pve-1", "next", time.Minute)
			if err == nil {
				_, err = l.Release(context.Background())
			}
			got <- err
		}()
		testkit.Eventually(t, 5*time.Second, "next asks again while waiting", func() bool {
			st, err := g.Status(context.Background(), "pve-1")
			return err == nil && len(st.Waiters) == 1 && st.Waiters[0].Seen.After(holder.Since())
		})
		release(t, holder)
		select {
		case err := <-got:
			if err != nil {
				t.Errorf("acquire: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("waiter still waiting 10s after release")
		}
	})

	t.Run("OthersReturnAtOnce", func(t *testing.T) {
		t.Parallel()
		g, _, _ := newGate(t, gate.Config{})
		holder := acquire(t, g, "pve-1", "holder")
		busy(t, g, "pve-1", "first")
		start := time.Now()
		_, err := g.Acquire(context.Background(), "pve-1", "second", time.Hour)
		var be *gate.BusyError
		if !errors.As(err, &be) || be.Position != 2 {
			t.Fatalf("got %v, want busy at position 2", err)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("took %s, want an immediate answer", d)
		}
		release(t, holder)
	})

	t.Run("GivesUpAfterWait", func(t *testing.T) {
		t.Parallel()
		g, _, _ := newGate(t, gate.Config{})
		holder := acquire(t, g, "pve-1", "holder")
		_, err := g.Acquire(context.Background(), "pve-1", "next", 100*time.Millisecond)
		var be *gate.BusyError
		if !errors.As(err, &be) || be.Position != 1 || be.Holder != "holder" {
			t.Fatalf("got %v, want busy at position 1", err)
		}
		release(t, holder)
	})
}

func TestDeadHolder(t *testing.T) {
	t.Parallel()
	g, _, _ := newGate(t, gate.Config{TTL: 300 * time.Millisecond})
	dead := acquire(t, g, "pve-1", "dead")
	dead.StopRenewing() // the worker died mid-build

	be := busy(t, g, "pve-1", "next")
	if be.Holder != "dead" || be.Position != 1 {
		t.Fatalf("got %+v, want held by dead, position 1", be)
	}
	next, err := g.Acquire(context.Background(), "pve-1", "next", 30*time.Second)
	if err != nil {
		t.Fatalf("acquire after the holder's lease expired: %v", err)
	}
	if next.Fence() <= dead.Fence() {
		t.Errorf("fence %d, want above the dead holder's %d", next.Fence(), dead.Fence())
	}

	// The dead holder's late release must not free the new holder's gate.
	if _, err := dead.Release(context.Background()); !errors.Is(err, gate.ErrNotHolder) {
		t.Errorf("late release: got %v, want ErrNotHolder", err)
	}
	st, err := g.Status(context.Background(), "pve-1")
	if err != nil {
		t.Fatalf("status: %v", err)
	}
	if st.Holder != "next" {
		t.Errorf("holder after the late release is %q, want next", st.Holder)
	}
	if err := next.Context().Err(); err != nil {
		t.Errorf("new holder's context: %v, want alive", err)
	}
	// The new holder keeps renewing past its TTL.
	keepsHolding(t, g, "pve-1", "next", time.Second)
	if err := next.Context().Err(); err != nil {
		t.Errorf("new holder's context: %v, want alive", context.Cause(next.Context()))
	}
	release(t, next)
}

func TestLeaseLoss(t *testing.T) {
	t.Parallel()

	t.Run("TakenOverCancelsAtOnce", func(t *testing.T) {
		t.Parallel()
		g, rdb, ns := newGate(t, gate.Config{TTL: 300 * time.Millisecond})
		l := acquire(t, g, "pve-1", "holder")
		// The work the lease guards, under a context of its own that outlives the lease.
		work, stopWork := l.Guard(context.Background())
		defer stopWork()
		if err := rdb.HSet(context.Background(), ns+":gate:{pve-1}:lock", "owner", "intruder").Err(); err != nil {
			t.Fatalf("hset: %v", err)
		}
		select {
		case <-l.Context().Done():
		case <-time.After(5 * time.Second):
			t.Fatal("lease context not cancelled after a takeover")
		}
		if cause := context.Cause(l.Context()); !errors.Is(cause, gate.ErrLost) || !strings.Contains(cause.Error(), "intruder") {
			t.Errorf("cause %v, want ErrLost naming intruder", cause)
		}
		testkit.Eventually(t, time.Second, "the guarded work did not stop with the lease", func() bool { return work.Err() != nil })
		if cause := context.Cause(work); !errors.Is(cause, gate.ErrLost) {
			t.Errorf("guarded work's cause %v, want ErrLost", cause)
		}
		if _, err := l.Release(context.Background()); !errors.Is(err, gate.ErrNotHolder) {
			t.Errorf("release: got %v, want ErrNotHolder", err)
		}
		if owner, _ := rdb.HGet(context.Background(), ns+":gate:{pve-1}:lock", "owner").Result(); owner != "intruder" {
			t.Errorf("lock owner after release is %q, want intruder left alone", owner)
		}
	})

	t.Run("UnreachableRedisCancelsBeforeExpiry", func(t *testing.T) {
		t.Parallel()
		_, ns := testkit.Redis(t)
		opts, err := redis.ParseURL(testkit.RedisURL())
		if err != nil {
			t.Fatalf("parse url: %v", err)
		}
		own := redis.NewClient(opts)
		g, err := gate.New(own, gate.Config{Prefix: ns, TTL: 600 * time.Millisecond})
		if err != nil {
			t.Fatalf("new gate: %v", err)
		}
		l := acquire(t, g, "pve-1", "holder")
		acquired := time.Now()
		_ = own.Close() // every renewal fails from now on

		select {
		case <-l.Context().Done():
		case <-time.After(5 * time.Second):
			t.Fatal("lease context not cancelled while renewals fail")
		}
		if cause := context.Cause(l.Context()); !errors.Is(cause, gate.ErrLost) || !errors.Is(cause, redis.ErrClosed) {
			t.Errorf("cause %v, want ErrLost wrapping the Redis error", cause)
		}
		if d := time.Since(acquired); d >= 600*time.Millisecond {
			t.Errorf("cancelled %s after the last renewal, want before the 600ms TTL ran out", d)
		}
	})

	t.Run("ParentCancelEndsContextNotLease", func(t *testing.T) {
		t.Parallel()
		g, _, _ := newGate(t, gate.Config{TTL: 300 * time.Millisecond})
		ctx, cancel := context.WithCancel(context.Background())
		l, err := g.TryAcquire(ctx, "pve-1", "holder")
		if err != nil {
			t.Fatalf("acquire: %v", err)
		}
		cancel() // the task was cancelled; its work winds down under the lease
		if l.Context().Err() == nil {
			t.Error("lease context alive after its parent was cancelled")
		}
		keepsHolding(t, g, "pve-1", "holder", time.Second) // well past the TTL
		if _, err := l.Release(ctx); err != nil {
			t.Errorf("release with a cancelled ctx: %v", err)
		}
	})
}

func TestStaleWaiter(t *testing.T) {
	t.Parallel()
	g, _, _ := newGate(t, gate.Config{StaleAfter: 300 * time.Millisecond})
	holder := acquire(t, g, "pve-1", "holder")
	busy(t, g, "pve-1", "dead") // asks once, then its worker dies
	if be := busy(t, g, "pve-1", "live"); be.Position != 2 {
		t.Fatalf("live: position %d, want 2", be.Position)
	}
	release(t, holder)

	var live *gate.Lease
	testkit.Eventually(t, 10*time.Second, "live passes the stale waiter", func() bool {
		l, err := g.TryAcquire(context.Background(), "pve-1", "live")
		live = l
		return err == nil
	})
	// Back from the dead, the waiter is first in line again: it kept its place.
	if be := busy(t, g, "pve-1", "dead"); be.Position != 1 || be.Holder != "live" {
		t.Errorf("returning waiter: got %+v, want position 1 behind live", be)
	}
	release(t, live)
}

func TestLeave(t *testing.T) {
	t.Parallel()
	g, _, _ := newGate(t, gate.Config{})
	ctx := context.Background()
	holder := acquire(t, g, "pve-1", "holder")
	busy(t, g, "pve-1", "a")
	busy(t, g, "pve-1", "b")
	if err := g.Leave(ctx, "pve-1", "a"); err != nil {
		t.Fatalf("leave: %v", err)
	}
	if be := busy(t, g, "pve-1", "b"); be.Position != 1 {
		t.Errorf("b after a left: position %d, want 1", be.Position)
	}
	if err := g.Leave(ctx, "pve-1", "never-queued"); err != nil {
		t.Errorf("leave when not in line: %v", err)
	}
	if next := release(t, holder); next != "b" {
		t.Errorf("next %q, want b", next)
	}
	release(t, acquire(t, g, "pve-1", "b"))
}

func TestNewRejectsNegativeDurations(t *testing.T) {
	t.Parallel()
	rdb, ns := testkit.Redis(t)
	if _, err := gate.New(rdb, gate.Config{Prefix: ns, TTL: -time.Second}); err == nil {
		t.Error("negative TTL accepted")
	}
}

func TestBusyError(t *testing.T) {
	t.Parallel()
	since := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		err  *gate.BusyError
		want string
	}{
		{"Held", &gate.BusyError{Node: "pve-2", Holder: "s1-1", Since: since, Position: 2, Head: "s2-1"},
			"node pve-2 gate busy: held by s1-1 since 2026-12-02T10:00:00Z, position 2 in line"},
		{"FreeButBehind", &gate.BusyError{Node: "pve-2", Position: 2, Head: "s2-1"},
			"node pve-2 gate busy: s2-1 is ahead, position 2 in line"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := tc.err.Error(); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
			wrapped := fmt.Errorf("step: %w", tc.err)
			if !gate.IsBusy(wrapped) || !errors.Is(wrapped, gate.ErrBusy) {
				t.Error("a wrapped BusyError is not busy")
			}
		})
	}
	if gate.IsBusy(errors.New("other")) {
		t.Error("another error is busy")
	}
	for _, c := range []struct {
		err      error
		min, max time.Duration
	}{
		{&gate.BusyError{Position: 1}, 3 * time.Second, 5 * time.Second},
		{fmt.Errorf("step: %w", &gate.BusyError{Position: 0}), 3 * time.Second, 5 * time.Second}, // a holder ahead, not in line
		{&gate.BusyError{Position: 2}, 6 * time.Second, 8 * time.Second},
		{&gate.BusyError{Position: 60}, 8 * time.Second, gate.MaxBusyRetryDelay},
		{gate.ErrBusy, 3 * time.Second, 5 * time.Second},
	} {
		for range 100 {
			if d := gate.BusyRetryDelay(c.err); d < c.min || d >= c.max {
				t.Fatalf("BusyRetryDelay(%v) %s, want within [%s, %s)", c.err, d, c.min, c.max)
			}
		}
	}
	if gate.MaxBusyRetryDelay >= gate.DefaultStaleAfter/2 {
		t.Fatalf("MaxBusyRetryDelay %s: a waiter between two asks would come near to losing its place", gate.MaxBusyRetryDelay)
	}
}

// TestACanceledWaiterLeavesTheLineAtOnce: three builds wait for a node; the first, waiting in
// Acquire, is canceled (its step leaves the line, as run:advance does). Its Acquire used to
// put it back in line at its next ask, where it stayed, live, for StaleAfter once its task
// stopped asking: the next build on the node waited a minute behind a build that no longer
// existed. A waiter that left is never queued again: its Acquire returns ErrLeft at once, and
// the builds behind it, and after it, get the gate as soon as it is free.
func TestACanceledWaiterLeavesTheLineAtOnce(t *testing.T) {
	t.Parallel()
	g, _, _ := newGate(t, gate.Config{}) // StaleAfter: the default minute
	ctx := context.Background()
	holder := acquire(t, g, "pve-1", "holder")
	for _, w := range []string{"first", "second", "third"} {
		busy(t, g, "pve-1", w)
	}
	started := time.Now()
	got := make(chan error, 1)
	go func() {
		l, err := g.Acquire(ctx, "pve-1", "first", 2*time.Second) // the workers' GateWait
		if l != nil {
			_, _ = l.Release(ctx)
		}
		got <- err
	}()
	testkit.Eventually(t, 5*time.Second, "first asks again while waiting", func() bool {
		st, err := g.Status(ctx, "pve-1")
		return err == nil && len(st.Waiters) == 3 && st.Waiters[0].Owner == "first" && st.Waiters[0].Seen.After(started)
	})
	if err := g.Leave(ctx, "pve-1", "first"); err != nil { // the cancel
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if !errors.Is(err, gate.ErrLeft) {
			t.Errorf("the canceled waiter's Acquire: %v, want ErrLeft", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the canceled waiter's Acquire did not return")
	}
	if be := busy(t, g, "pve-1", "second"); be.Position != 1 {
		t.Fatalf("second after first was canceled: %+v, want first in line", be)
	}
	if err := g.Enqueue(ctx, "pve-1", "first", time.Time{}, false); err != nil { // a late run:advance
		t.Fatal(err)
	}
	if _, err := g.TryAcquire(ctx, "pve-1", "first"); !errors.Is(err, gate.ErrLeft) {
		t.Errorf("the canceled waiter asks again: %v, want ErrLeft", err)
	}
	release(t, holder)
	release(t, acquire(t, g, "pve-1", "second"))
	release(t, acquire(t, g, "pve-1", "third"))
	// The next build on the node, which came after the cancel, is not held up by it.
	if _, err := g.TryAcquire(ctx, "pve-1", "next"); err != nil {
		st, _ := g.Status(ctx, "pve-1")
		t.Fatalf("the next build: %v (line %+v), want the gate at once", err, st.Waiters)
	}
}

// TestBehindSparesOnlyAWaiterThatWasRefusedAndIsNotNext checks what lets a waiting step skip
// reading its work on each ask: Behind refuses only an owner that TryAcquire refused before and
// that is still behind another waiter. An owner asking for the first time must read (its work
// may no longer be needed and must then leave the line at once), and the owner first in line
// must read before it takes the gate, not under it. Behind never takes the gate.
func TestBehindSparesOnlyAWaiterThatWasRefusedAndIsNotNext(t *testing.T) {
	t.Parallel()
	g, _, _ := newGate(t, gate.Config{})
	ctx := context.Background()
	holder := acquire(t, g, "pve-1", "holder")
	if err := g.Enqueue(ctx, "pve-1", "a", time.Now().Add(-time.Second), false); err != nil {
		t.Fatal(err)
	}
	if err := g.Enqueue(ctx, "pve-1", "b", time.Now(), false); err != nil {
		t.Fatal(err)
	}
	if err := g.Behind(ctx, "pve-1", "b"); err != nil {
		t.Fatalf("b's first ask, second in line: %v, want nil (it has not read its work yet)", err)
	}
	busy(t, g, "pve-1", "b")
	var be *gate.BusyError
	if err := g.Behind(ctx, "pve-1", "b"); !errors.As(err, &be) || be.Position != 2 || be.Head != "a" || be.Holder != "holder" {
		t.Fatalf("b refused before, second in line: %v, want busy at position 2 behind a", err)
	}
	busy(t, g, "pve-1", "a")
	if err := g.Behind(ctx, "pve-1", "a"); err != nil {
		t.Fatalf("a refused before, first in line: %v, want nil (it reads before the gate is free)", err)
	}
	if err := g.Behind(ctx, "pve-1", "holder"); err != nil {
		t.Fatalf("the holder: %v, want nil", err)
	}
	if st, err := g.Status(ctx, "pve-1"); err != nil || st.Holder != "holder" {
		t.Fatalf("status %+v (%v): Behind must not take or give the gate", st, err)
	}
	if next := release(t, holder); next != "a" {
		t.Fatalf("next %q, want a", next)
	}
	if err := g.Behind(ctx, "pve-1", "a"); err != nil {
		t.Fatalf("a first at a free gate: %v, want nil", err)
	}
	if st, _ := g.Status(ctx, "pve-1"); st.Holder != "" {
		t.Fatalf("Behind took the free gate for %s", st.Holder)
	}
	a := acquire(t, g, "pve-1", "a")
	if err := g.Behind(ctx, "pve-1", "b"); err != nil {
		t.Fatalf("b, first in line behind a: %v, want nil", err)
	}
	if err := g.Leave(ctx, "pve-1", "b"); err != nil {
		t.Fatal(err)
	}
	if err := g.Behind(ctx, "pve-1", "b"); !errors.Is(err, gate.ErrLeft) {
		t.Fatalf("b after it left: %v, want ErrLeft", err)
	}
	release(t, a)
}

// TestBehindRefusesFromItsFirstAskAWaiterEnqueuedAsAsked: a waiter registered as asked (one
// with nothing to look at before its turn) is refused by Behind from its first ask while
// others are ahead, and spared once it is next.
func TestBehindRefusesFromItsFirstAskAWaiterEnqueuedAsAsked(t *testing.T) {
	t.Parallel()
	g, _, _ := newGate(t, gate.Config{})
	ctx := context.Background()
	holder := acquire(t, g, "pve-1", "holder")
	if err := g.Enqueue(ctx, "pve-1", "a", time.Now().Add(-time.Second), true); err != nil {
		t.Fatal(err)
	}
	if err := g.Enqueue(ctx, "pve-1", "b", time.Now(), true); err != nil {
		t.Fatal(err)
	}
	var be *gate.BusyError
	if err := g.Behind(ctx, "pve-1", "b"); !errors.As(err, &be) || be.Position != 2 || be.Head != "a" {
		t.Fatalf("b's first ask, second in line: %v, want busy at position 2 behind a", err)
	}
	if err := g.Behind(ctx, "pve-1", "a"); err != nil {
		t.Fatalf("a, first in line: %v, want nil", err)
	}
	if next := release(t, holder); next != "a" {
		t.Fatalf("next %q, want a", next)
	}
	acquire(t, g, "pve-1", "a")
	if err := g.Behind(ctx, "pve-1", "b"); err != nil {
		t.Fatalf("b, next behind a: %v, want nil", err)
	}
}

// TestBehindQueuesNoOneNotInLine: Behind asked for an owner that is not in the line — a delivery
// of an attempt superseded or never queued, asking before it has read its step — answers nil
// and leaves the line as it was, so no ghost stands ahead of the real waiters.
func TestBehindQueuesNoOneNotInLine(t *testing.T) {
	t.Parallel()
	g, _, _ := newGate(t, gate.Config{})
	ctx := context.Background()
	holder := acquire(t, g, "pve-1", "holder")
	if err := g.Enqueue(ctx, "pve-1", "a", time.Now(), false); err != nil {
		t.Fatal(err)
	}
	if err := g.Behind(ctx, "pve-1", "ghost"); err != nil {
		t.Fatalf("an owner not in line: %v, want nil", err)
	}
	st, err := g.Status(ctx, "pve-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Waiters) != 1 || st.Waiters[0].Owner != "a" {
		t.Fatalf("line %+v after Behind of an owner not in it, want a alone", st.Waiters)
	}
	if next := release(t, holder); next != "a" {
		t.Fatalf("next %q, want a", next)
	}
}
