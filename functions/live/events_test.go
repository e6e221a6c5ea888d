package live_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"horizon/functions/apitest"
	"horizon/functions/stream"
	"horizon/shared/auth"
	"horizon/shared/events"
	"horizon/shared/rstream"
	"horizon/shared/testkit"
)

// world is two teams with a stack each, a viewer of the first and a member of the second.
type world struct {
	t              *testing.T
	s              *apitest.Server
	teamA, teamB   uuid.UUID
	stackA, stackB uuid.UUID
	viewerA        string
	memberB        string
}

func newWorld(t *testing.T) *world {
	s := apitest.New(t, nil)
	w := &world{t: t, s: s, teamA: s.NewTeam("a"), teamB: s.NewTeam("b")}
	w.stackA, w.stackB = s.NewStack(w.teamA, "a"), s.NewStack(w.teamB, "b")
	_, w.viewerA = s.NewUser(auth.RoleViewer, w.teamA)
	_, w.memberB = s.NewUser(auth.RoleMember, w.teamB)
	return w
}

func (w *world) publish(e events.Event) string {
	w.t.Helper()
	id, err := w.s.Deps.Events.Publish(context.Background(), e)
	if err != nil {
		w.t.Fatal(err)
	}
	return id.String()
}

func (w *world) stackEvent(stack, team uuid.UUID, state string) events.Event {
	return events.Event{Type: events.Stack, ID: stack, StackID: stack, TeamID: team, State: state}
}

// followers waits until n event streams follow the stream live: what is published from then on
// reaches them.
func (w *world) followers(n int) {
	w.t.Helper()
	testkit.Eventually(w.t, 10*time.Second, "event streams following", func() bool { return w.s.Deps.EventHub.Stats().Members == n })
}

func ids(evs []apitest.Event) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, ev.ID)
	}
	return out
}

// TestEventsShowOnlyWhatTheCallerMaySee has a viewer, a viewer filtering on a stack and an
// admin follow the events while both teams' objects change: each sees, in publish order, the
// changes of the teams it may see and the catalogue's ISOs, and no other.
func TestEventsShowOnlyWhatTheCallerMaySee(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	viewer := w.s.Stream("/v1/events", apitest.Req{Token: w.viewerA})
	oneStack := w.s.Stream("/v1/events?stack="+w.stackA.String(), apitest.Req{Token: w.viewerA})
	admin := w.s.Stream("/v1/events", apitest.Req{})
	if r := w.s.Stream("/v1/events?stack="+w.stackA.String(), apitest.Req{Token: w.memberB}); r.Status != 404 {
		t.Fatalf("another team's stack: %d %s, want 404", r.Status, r.Body)
	}
	if r := w.s.Stream("/v1/events?stack=nope", apitest.Req{Token: w.memberB}); r.Status != 400 {
		t.Fatalf("a malformed stack: %d %s, want 400", r.Status, r.Body)
	}
	w.followers(3)

	two := 2
	a1 := w.publish(w.stackEvent(w.stackA, w.teamA, "deploying"))
	b1 := w.publish(w.stackEvent(w.stackB, w.teamB, "deploying"))
	a2 := w.publish(events.Event{Type: events.Step, ID: uuid.New(), StackID: w.stackA, TeamID: w.teamA, RunID: uuid.New(), State: "running", Job: "web", Execution: &two})
	iso := w.publish(events.Event{Type: events.ISO, ID: uuid.New(), State: "ready"})
	b2 := w.publish(events.Event{Type: events.Run, ID: uuid.New(), StackID: w.stackB, TeamID: w.teamB, RunID: uuid.New(), State: "failed"})
	a3 := w.publish(w.stackEvent(w.stackA, w.teamA, "deployed"))

	last := func(ev apitest.Event) bool { return ev.ID == a3 }
	if d := cmp.Diff([]string{a1, a2, iso, a3}, ids(viewer.Until(last))); d != "" {
		t.Errorf("viewer of team a (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{a1, a2, a3}, ids(oneStack.Until(last))); d != "" {
		t.Errorf("viewer of stack a (-want +got):\n%s", d)
	}
	got := admin.Until(last)
	if d := cmp.Diff([]string{a1, b1, a2, iso, b2, a3}, ids(got)); d != "" {
		t.Errorf("admin (-want +got):\n%s", d)
	}
	var step events.Event
	if got[2].Name != "event" || json.Unmarshal([]byte(got[2].Data), &step) != nil || step.Job != "web" || *step.Execution != 2 {
		t.Errorf("step event %+v", got[2])
	}
}

// TestEventsResumeWithLastEventID reconnects with Last-Event-ID and gets exactly the events
// after it, then live ones; an id the stream no longer holds gets a reset.
func TestEventsResumeWithLastEventID(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	var published []string
	for _, state := range []string{"draft", "deploying", "deployed", "updating", "failed", "updating", "deployed"} {
		published = append(published, w.publish(w.stackEvent(w.stackA, w.teamA, state)))
	}
	for i, id := range published[:len(published)-1] {
		st := w.s.Stream("/v1/events", apitest.Req{Token: w.viewerA, Headers: map[string]string{"Last-Event-ID": id}})
		got := st.Until(func(ev apitest.Event) bool { return ev.ID == published[len(published)-1] })
		if d := cmp.Diff(published[i+1:], ids(got)); d != "" {
			t.Fatalf("resume after %d (-want +got):\n%s", i, d)
		}
		st.Close()
	}
	st := w.s.Stream("/v1/events?last_event_id="+published[2], apitest.Req{Token: w.viewerA})
	st.Until(func(ev apitest.Event) bool { return ev.ID == published[len(published)-1] })
	live := w.publish(w.stackEvent(w.stackA, w.teamA, "removing"))
	if ev := st.Next(); ev.ID != live {
		t.Fatalf("after the backfill got %+v, want the live event %s", ev, live)
	}

	lastID, _ := rstream.ParseID(live)
	future := rstream.ID{MS: lastID.MS + 1_000_000}
	reset := w.s.Stream("/v1/events", apitest.Req{Token: w.viewerA, Headers: map[string]string{"Last-Event-ID": future.String()}})
	if ev := reset.Next(); ev.Name != "reset" || ev.ID != live || !strings.Contains(ev.Data, live) {
		t.Fatalf("resuming from an id the stream does not hold: %+v, want a reset to %s", ev, live)
	}
	if r := w.s.Stream("/v1/events", apitest.Req{Token: w.viewerA, Headers: map[string]string{"Last-Event-ID": "yesterday"}}); r.Status != 400 {
		t.Fatalf("a malformed Last-Event-ID: %d, want 400", r.Status)
	}
}

// TestStreamsEndAtShutdownAndAreCounted checks that open streams show in /metrics, end when the
// server closes them (so that shutdown does not wait for them), and that new ones are then
// refused with 503.
func TestStreamsEndAtShutdownAndAreCounted(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	st := w.s.Stream("/v1/events", apitest.Req{Token: w.viewerA})
	w.followers(1)
	m := w.s.Do("GET", "/metrics", apitest.Req{Token: apitest.NoToken})
	if !strings.Contains(string(m.Body), `horizon_sse_connections{stream="events"} 1`) {
		t.Fatalf("metrics lack the open stream:\n%s", grep(string(m.Body), "horizon_sse"))
	}
	w.s.Deps.Streams.Close()
	if rest := st.Rest(); len(rest) != 0 {
		t.Fatalf("events after the close: %+v", rest)
	}
	if r := w.s.Stream("/v1/events", apitest.Req{Token: w.viewerA}); r.Status != 503 || r.Header.Get("Retry-After") == "" {
		t.Fatalf("a stream after the close: %d %v", r.Status, r.Header)
	}
	testkit.Eventually(t, 10*time.Second, "the closed stream uncounted", func() bool { return w.s.Deps.Streams.Open() == 0 })
}

func grep(s, sub string) string {
	var b strings.Builder
	for l := range strings.Lines(s) {
		if strings.Contains(l, sub) {
			b.WriteString(l)
		}
	}
	return b.String()
}

// TestHeartbeatsNoticeAGoneClient: an idle event stream sends a comment every heartbeat, and
// that is how the server learns that a client left (fasthttp reports no disconnect): its
// stream ends and is no longer counted.
func TestHeartbeatsNoticeAGoneClient(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, &apitest.Options{Streams: stream.Config{Heartbeat: 20 * time.Millisecond}})
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, s.URL+"/v1/events", nil)
	req.Header.Set("Authorization", "Bearer "+s.Admin)
	if err := req.Write(conn); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("open: %v %v", res, err)
	}
	br := bufio.NewReader(res.Body)
	for pings := 0; pings < 3; {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("after %d pings: %v", pings, err)
		}
		if line == ": ping\n" {
			pings++
		}
	}
	if s.Deps.Streams.Open() != 1 {
		t.Fatalf("%d streams open, want 1", s.Deps.Streams.Open())
	}
	_ = conn.Close() // the client leaves without a word
	testkit.Eventually(t, 10*time.Second, "the gone client's stream ended", func() bool {
		return s.Deps.Streams.Open() == 0 && s.Deps.EventHub.Stats().Members == 0
	})
}

// TestStreamsBeyondTheLimitAreRefused: a process serves at most MaxStreams streams; the next
// is told to come back.
func TestStreamsBeyondTheLimitAreRefused(t *testing.T) {
	t.Parallel()
	// A short heartbeat: that is how the server learns the first client left.
	s := apitest.New(t, &apitest.Options{Streams: stream.Config{MaxStreams: 1, Heartbeat: 20 * time.Millisecond}})
	first := s.Stream("/v1/events", apitest.Req{})
	if first.Status != 200 {
		t.Fatalf("first stream: %d", first.Status)
	}
	if r := s.Stream("/v1/events", apitest.Req{}); r.Status != 503 || r.Header.Get("Retry-After") == "" {
		t.Fatalf("a stream beyond the limit: %d %v %s", r.Status, r.Header, r.Body)
	}
	first.Close()
	testkit.Eventually(t, 10*time.Second, "the first stream ended", func() bool { return s.Deps.Streams.Open() == 0 })
	if r := s.Stream("/v1/events", apitest.Req{}); r.Status != 200 {
		t.Fatalf("a stream once the first ended: %d %s", r.Status, r.Body)
	}
}
