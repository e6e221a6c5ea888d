package logstream_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"horizon/shared/logstream"
	"horizon/shared/rstream"
)

// TestRetentionCapsAndExpiresTheStreamButKeepsEveryLine configures a short stream (MaxLen) and
// retention, as HORIZON_LOG_MAXLEN and HORIZON_LOG_RETENTION do: the Redis stream is trimmed
// and set to expire that long after the run ends, while Postgres keeps every line and a
// backfill from the start still returns them all.
func TestRetentionCapsAndExpiresTheStreamButKeepsEveryLine(t *testing.T) {
	t.Parallel()
	e := newEnv(t, logstream.Config{MaxLen: 500, Retention: 90 * time.Minute})
	ctx := context.Background()
	run, stack := uuid.New(), uuid.New()
	e.write(run, stack, source{job: "web"}, "line", 5000)
	before, err := e.rdb.TTL(ctx, e.c.Key(run)).Result()
	if err != nil || before < 29*24*time.Hour {
		t.Fatalf("stream TTL while the run lasts is %v (%v), want the 30 d MaxAge", before, err)
	}
	e.end(run, stack, "succeeded")

	n, err := e.rdb.XLen(ctx, e.c.Key(run)).Result()
	// MAXLEN ~ trims whole macro nodes (100 entries each by default), so the length is
	// approximate: above 500, far below the 5 000 written.
	if err != nil || n < 500 || n > 1000 {
		t.Fatalf("stream length %d (%v), want about 500", n, err)
	}
	ttl, err := e.rdb.TTL(ctx, e.c.Key(run)).Result()
	if err != nil || ttl <= 89*time.Minute || ttl > 90*time.Minute {
		t.Fatalf("stream TTL after the end is %v (%v), want the configured 90 min", ttl, err)
	}
	if d := cmp.Diff(numbered("line", 5000), e.storedTexts(run)); d != "" {
		t.Fatalf("log_lines (-want +got):\n%s", d)
	}
	if d := cmp.Diff(append(numbered("line", 5000), "<end>"), texts(e.backfill(run, rstream.ID{}, logstream.Filter{}))); d != "" {
		t.Fatalf("backfill of a trimmed stream (-want +got):\n%s", d)
	}
}
