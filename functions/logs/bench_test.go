package logs_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"horizon/functions/apitest"
	"horizon/shared/auth"
	"horizon/shared/logstream"
	"horizon/shared/logstream/logstreamtest"
	"horizon/shared/rstream"
)

// BenchmarkSSEReport measures the log pipeline end to end — Writer → Redis → the API's hub → GET
// /v1/stacks/{id}/logs/stream → a Go SSE client over HTTP — against raw go-redis on the same
// Redis in the same run, and prints a table (logstreamtest; shared/logstream's
// BenchmarkPipelineReport measures the same with in-process hub subscribers):
//
//	go test ./functions/logs -run '^$' -bench SSEReport -benchtime 1x
//
// Resumes reconnect with Last-Event-ID; stalled and idle clients are TCP connections that
// never read. Client and server share the process and its CPUs. It asserts nothing but the
// absence of lost lines.
func BenchmarkSSEReport(b *testing.B) {
	logstreamtest.Run(b, "SSE client", func(t testing.TB, cfg logstream.Config) (*logstreamtest.Env, logstreamtest.Follower) {
		s := apitest.New(t, &apitest.Options{Logs: cfg, Readers: 250})
		team := s.NewTeam("bench")
		_, member := s.NewUser(auth.RoleMember, team)
		f := &sseFollower{t: t, s: s, token: member, stacks: map[uuid.UUID]uuid.UUID{}}
		env := &logstreamtest.Env{Redis: s.Redis, NS: s.Deps.Namespace, DB: s.DB, Client: s.Deps.Logs,
			NewRun: func() (uuid.UUID, uuid.UUID) {
				// A stack per run: a stack has one run in progress at a time.
				stack := s.NewStack(team, "bench-"+uuid.NewString()[:8])
				run := s.NewRun(stack)
				f.mu.Lock()
				f.stacks[run] = stack
				f.mu.Unlock()
				return run, stack
			}}
		return env, f
	})
}

// sseFollower follows runs' logs through the API with an HTTP client reading SSE.
type sseFollower struct {
	t     testing.TB
	s     *apitest.Server
	token string

	mu     sync.Mutex
	stacks map[uuid.UUID]uuid.UUID // run → stack
}

func (f *sseFollower) path(run uuid.UUID) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return "/v1/stacks/" + f.stacks[run].String() + "/logs/stream?run=" + run.String()
}

func (f *sseFollower) Follow(run uuid.UUID, after rstream.ID) (<-chan logstream.Message, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, f.s.URL+f.path(run), nil)
	req.Header.Set("Authorization", "Bearer "+f.token)
	if !after.IsZero() {
		req.Header.Set("Last-Event-ID", run.String()+"/"+after.String())
	}
	ch := make(chan logstream.Message, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(ch)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return
		}
		defer res.Body.Close()
		_ = apitest.ReadEvents(res.Body, func(ev apitest.Event) bool { // a cut stream just ends the follow
			_, id, _ := strings.Cut(ev.ID, "/")
			m := logstream.Message{}
			m.ID, _ = rstream.ParseID(id) // ids the server sent
			switch ev.Name {
			case "line":
				m.Kind = logstream.KindLine
				if json.Unmarshal([]byte(ev.Data), &m.Line) != nil {
					return false
				}
			case "end":
				m.Kind = logstream.KindEnd
			case "lagging":
				m.Kind = logstream.KindLagging
			default:
				return true
			}
			select {
			case ch <- m:
				return true
			case <-ctx.Done():
				return false
			}
		})
	}()
	return ch, func() {
		cancel()
		<-done
	}
}

func (f *sseFollower) Stall(run uuid.UUID) func() {
	conn, _ := pausedConn(f.t, f.s, f.path(run), f.token)
	return func() { _ = conn.Close() } // closing a connection we never read
}

func (f *sseFollower) Hub() rstream.Stats { return f.s.Deps.LogHub.Stats() }
