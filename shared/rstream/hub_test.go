package rstream_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"horizon/shared/rstream"
	"horizon/shared/testkit"
)

func decodeText(m redis.XMessage) (string, int) {
	s, _ := m.Values["v"].(string)
	return s, len(s)
}

func add(t *testing.T, rdb *redis.Client, key string, maxLen int64, vs ...string) []rstream.ID {
	t.Helper()
	var ids []rstream.ID
	for _, v := range vs {
		s, err := rdb.XAdd(context.Background(), &redis.XAddArgs{Stream: key, MaxLen: maxLen, Approx: true, Values: []string{"v", v}}).Result()
		if err != nil {
			t.Fatalf("xadd: %v", err)
		}
		id, _ := rstream.ParseID(s)
		ids = append(ids, id)
	}
	return ids
}

func values(n int, prefix string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return out
}

// next takes n entries from m, failing the test on an error or after a deadline.
func next(t *testing.T, m *rstream.Member[string], n int) []rstream.Entry[string] {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []rstream.Entry[string]
	for len(out) < n {
		es, err := m.Next(ctx)
		if err != nil {
			t.Fatalf("after %d of %d entries: %v", len(out), n, err)
		}
		out = append(out, es...)
	}
	if len(out) != n {
		t.Fatalf("got %d entries, want %d", len(out), n)
	}
	return out
}

func TestReadPageReportsTrimming(t *testing.T) {
	t.Parallel()
	rdb, ns := testkit.Redis(t)
	ctx := context.Background()
	key := ns + ":s"

	p, err := rstream.ReadPage(ctx, rdb, key, rstream.ID{}, 10)
	if err != nil || p.Exists {
		t.Fatalf("missing key: got %+v, %v; want Exists false", p, err)
	}
	ids := add(t, rdb, key, 10, values(1000, "v")...)
	p, err = rstream.ReadPage(ctx, rdb, key, rstream.ID{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Exists || !p.Trimmed || p.Entries[0].ID != p.First.String() || p.Last != ids[999] {
		t.Fatalf("from 0: got exists=%v trimmed=%v first=%v last=%v entries[0]=%s", p.Exists, p.Trimmed, p.First, p.Last, p.Entries[0].ID)
	}
	// From a surviving entry nothing is missing.
	first := p.First
	p, err = rstream.ReadPage(ctx, rdb, key, first, 10)
	if err != nil || p.Trimmed || !first.Less(mustID(t, p.Entries[0].ID)) {
		t.Fatalf("from %v: got trimmed=%v first entry %s, %v; want not trimmed, the next entry", first, p.Trimmed, p.Entries[0].ID, err)
	}
}

func mustID(t *testing.T, s string) rstream.ID {
	t.Helper()
	id, err := rstream.ParseID(s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func TestHubFansOutInOrderAndJoinsWithoutGaps(t *testing.T) {
	t.Parallel()
	rdb, ns := testkit.Redis(t)
	key := ns + ":s"
	h := rstream.NewHub(rdb, rstream.Config{Block: 100 * time.Millisecond}, decodeText)
	defer h.Close()
	ctx := context.Background()

	a, err := h.Join(ctx, key, rstream.ID{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Leave()
	ids := add(t, rdb, key, 0, values(50, "x")...)
	got := next(t, a, 50) // the reader has now fanned out up to ids[49]

	// b joins behind the reader, c ahead of nothing: both must see exactly what follows.
	b, err := h.Join(ctx, key, ids[9])
	if err != nil {
		t.Fatal(err)
	}
	defer b.Leave()
	more := add(t, rdb, key, 0, values(20, "y")...)
	got = append(got, next(t, a, 20)...)
	gotB := next(t, b, 40+20)
	want := append(ids, more...)
	for i, e := range got {
		if e.ID != want[i] {
			t.Fatalf("a: entry %d is %v, want %v", i, e.ID, want[i])
		}
	}
	for i, e := range gotB {
		if e.ID != want[10+i] {
			t.Fatalf("b: entry %d is %v, want %v", i, e.ID, want[10+i])
		}
	}
	if st := h.Stats(); st.Streams != 1 || st.Members != 2 {
		t.Fatalf("stats %+v, want one stream with two members", st)
	}
}

func TestHubDropsLaggingMemberAndStopsReader(t *testing.T) {
	rdb, ns := testkit.Redis(t)
	key := ns + ":s"
	baseline := runtime.NumGoroutine()
	h := rstream.NewHub(rdb, rstream.Config{Block: 100 * time.Millisecond, Buffer: 1000, Count: 10}, decodeText)
	defer h.Close()
	ctx := context.Background()

	slow, err := h.Join(ctx, key, rstream.ID{})
	if err != nil {
		t.Fatal(err)
	}
	fast, err := h.Join(ctx, key, rstream.ID{})
	if err != nil {
		t.Fatal(err)
	}
	// 30 rounds of 10 entries of 10 bytes: the fast member takes each round before the next
	// is written, so it never holds more than 100 bytes; the slow one reads nothing and must
	// be dropped once it would hold more than 1000.
	for round := range 30 {
		vs := make([]string, 10)
		for i := range vs {
			vs[i] = fmt.Sprintf("%03d-%06d", round, i)
		}
		add(t, rdb, key, 0, vs...)
		next(t, fast, 10)
	}
	testkit.Eventually(t, 5*time.Second, "slow member dropped", func() bool { return h.Stats().Dropped == 1 })
	if st := h.Stats(); st.Members != 1 || st.Buffered != 0 {
		t.Fatalf("stats %+v: the dropped member still counts", st)
	}
	if _, err := slow.Next(ctx); !errors.Is(err, rstream.ErrLagging) {
		t.Fatalf("slow member: got %v, want ErrLagging", err)
	}
	slow.Leave()
	fast.Leave()
	testkit.Eventually(t, 5*time.Second, "reader stopped", func() bool {
		return h.Stats().Streams == 0 && runtime.NumGoroutine() <= baseline
	})
}
