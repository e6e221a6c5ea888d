package logstream_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"horizon/shared/logstream"
	"horizon/shared/logstream/logstreamtest"
	"horizon/shared/rstream"
)

// BenchmarkPipelineReport measures the log pipeline, with hub subscriptions in this process as the
// followers, against raw go-redis on the same Redis in the same run, and prints a table (see
// logstreamtest; functions/logs' BenchmarkSSEReport measures the same through the API's SSE):
//
//	go test ./shared/logstream -run '^$' -bench PipelineReport -benchtime 1x
//
// One pass is the whole measurement (about 30 s); it asserts nothing but the absence of lost
// lines.
func BenchmarkPipelineReport(b *testing.B) {
	logstreamtest.Run(b, "hub subscriber", func(t testing.TB, cfg logstream.Config) (*logstreamtest.Env, logstreamtest.Follower) {
		e := newEnv(t, cfg)
		opts := *e.rdb.Options()
		opts.PoolSize = 250 // a reader per run holds a connection in XREAD
		rdb := redis.NewClient(&opts)
		h := logstream.NewHub(e.c, rdb, rstream.Config{Block: time.Second})
		t.Cleanup(func() {
			h.Close()
			_ = rdb.Close() // nothing to flush on a reader's client
		})
		env := &logstreamtest.Env{Redis: e.rdb, NS: e.ns, DB: e.db, Client: e.c,
			NewRun: func() (uuid.UUID, uuid.UUID) { return uuid.New(), uuid.New() }}
		return env, hubFollower{h}
	})
}

// hubFollower follows through hub subscriptions, as the API's SSE handler does.
type hubFollower struct{ h *logstream.Hub }

func (f hubFollower) Follow(run uuid.UUID, after rstream.ID) (<-chan logstream.Message, func()) {
	s := f.h.Subscribe(context.Background(), run, after, logstream.Filter{})
	return s.C, s.Close
}

func (f hubFollower) Stall(run uuid.UUID) func() {
	return f.h.Subscribe(context.Background(), run, rstream.ID{}, logstream.Filter{}).Close
}

func (f hubFollower) Hub() rstream.Stats { return f.h.Stats() }
