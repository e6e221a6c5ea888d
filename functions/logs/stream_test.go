package logs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"horizon/functions/apitest"
	"horizon/shared/auth"
	"horizon/shared/events"
	"horizon/shared/horizon"
	"horizon/shared/logstream"
	"horizon/shared/secrets"
)

// fixture is a stack of a team with a member and a viewer, on a running API.
type fixture struct {
	t       *testing.T
	s       *apitest.Server
	team    uuid.UUID
	stack   uuid.UUID
	member  string
	viewer  string
	outside string // a member of another team
}

func newFixture(t *testing.T, opts *apitest.Options) *fixture {
	s := apitest.New(t, opts)
	f := &fixture{t: t, s: s, team: s.NewTeam("ops")}
	f.stack = s.NewStack(f.team, "shop")
	_, f.member = s.NewUser(auth.RoleMember, f.team)
	_, f.viewer = s.NewUser(auth.RoleViewer, f.team)
	_, f.outside = s.NewUser(auth.RoleMember, s.NewTeam("others"))
	return f
}

// source is who a line is from: a job's execution, or the run itself (job "").
type source struct {
	job  string
	exec int
}

// write writes "<prefix> <i>" lines, n from each source in turn, through a Writer, and closes
// it: the lines are in Redis and Postgres when it returns.
func (f *fixture) write(run uuid.UUID, prefix string, n int, srcs ...source) {
	f.t.Helper()
	w := f.s.Deps.Logs.NewWriter(run, f.stack, &secrets.Masker{})
	for i := range n {
		for _, src := range srcs {
			step := uuid.Nil
			if src.job != "" {
				step = uuid.NewSHA1(uuid.NameSpaceOID, fmt.Appendf(nil, "%s/%d", src.job, src.exec))
			}
			if err := w.Line(step, src.job, src.exec, logstream.Stdout, fmt.Sprintf("%s %s#%d %d", prefix, src.job, src.exec, i)); err != nil {
				f.t.Fatal(err)
			}
		}
	}
	if err := w.Close(context.Background()); err != nil {
		f.t.Fatal(err)
	}
}

// end ends run's log and the run itself, and announces it as the workers do.
func (f *fixture) end(run uuid.UUID, state horizon.RunState) {
	f.t.Helper()
	f.s.FinishRun(run, state)
	if err := f.s.Deps.Logs.End(context.Background(), run, f.stack, string(state), 0); err != nil {
		f.t.Fatal(err)
	}
	f.s.Deps.Notify(context.Background(), events.Event{Type: events.Run, ID: run, RunID: run, StackID: f.stack, TeamID: f.team, State: string(state)})
}

// startRun creates a run and announces it as the API does.
func (f *fixture) startRun() uuid.UUID {
	f.t.Helper()
	run := f.s.NewRun(f.stack)
	f.s.Deps.Notify(context.Background(), events.Event{Type: events.Run, ID: run, RunID: run, StackID: f.stack, TeamID: f.team, State: "queued"})
	return run
}

// line decodes a line event.
func line(t *testing.T, ev apitest.Event) logstream.Line {
	t.Helper()
	var l logstream.Line
	if ev.Name != "line" {
		t.Fatalf("event %q %q, want a line", ev.Name, ev.Data)
	}
	if err := json.Unmarshal([]byte(ev.Data), &l); err != nil {
		t.Fatalf("line %q: %v", ev.Data, err)
	}
	if ev.ID != l.Run.String()+"/"+l.ID.String() {
		t.Fatalf("event id %q, want <run>/<line id> %s/%s", ev.ID, l.Run, l.ID)
	}
	return l
}

func texts(t *testing.T, evs []apitest.Event) []string {
	t.Helper()
	var out []string
	for _, ev := range evs {
		if ev.Name == "line" {
			out = append(out, line(t, ev).Text)
		} else {
			out = append(out, "<"+ev.Name+">")
		}
	}
	return out
}

func numbered(prefix, src string, n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("%s %s %d", prefix, src, i))
	}
	return out
}

// TestStreamShowsOnlyItsExecutionFromBackfillToEnd follows one execution's log with a real
// client: the lines written before it connected, then live ones, only of that execution and in
// order, then the end; reconnecting after the end is answered 204.
func TestStreamShowsOnlyItsExecutionFromBackfillToEnd(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	run := f.startRun()
	mixed := []source{{"web", 0}, {"web", 1}, {"db", 1}, {"", 0}}
	f.write(run, "before", 20, mixed...)

	st := f.s.Stream("/v1/stacks/"+f.stack.String()+"/logs/stream?job=web&execution=1", apitest.Req{Token: f.viewer})
	if st.Status != 200 || st.Header.Get("Cache-Control") != "no-cache" {
		t.Fatalf("open: %d %v %s", st.Status, st.Header, st.Body)
	}
	got := st.Until(func(ev apitest.Event) bool { return ev.Name == "line" && line(t, ev).Text == "before web#1 19" })
	f.write(run, "after", 30, mixed...)
	f.end(run, horizon.RunSucceeded)
	got = append(got, st.Rest()...)

	want := append(numbered("before", "web#1", 20), numbered("after", "web#1", 30)...)
	want = append(want, "<end>")
	if d := cmp.Diff(want, texts(t, got)); d != "" {
		t.Fatalf("events (-want +got):\n%s", d)
	}
	for _, ev := range got[:len(got)-1] {
		if l := line(t, ev); l.Job != "web" || l.Execution != 1 || l.Run != run {
			t.Fatalf("line of %s#%d of run %s passed the filter", l.Job, l.Execution, l.Run)
		}
	}
	endEv := got[len(got)-1]
	var end struct {
		Run, Status string
		Unstreamed  *int64 // lines stored while Redis was down: none here
	}
	if err := json.Unmarshal([]byte(endEv.Data), &end); err != nil || end.Status != "succeeded" || end.Run != run.String() ||
		end.Unstreamed == nil || *end.Unstreamed != 0 {
		t.Fatalf("end event %+v: %v", endEv, err)
	}
	again := f.s.Stream("/v1/stacks/"+f.stack.String()+"/logs/stream?job=web&execution=1", apitest.Req{Token: f.viewer,
		Headers: map[string]string{"Last-Event-ID": endEv.ID}})
	if again.Status != 204 {
		t.Fatalf("reconnect after the end: %d %s, want 204", again.Status, again.Body)
	}
}

// TestStreamResumesWithLastEventIDExactly reconnects after every event of a run's log and
// checks each reconnection gets exactly the rest: nothing lost, nothing repeated.
func TestStreamResumesWithLastEventIDExactly(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	run := f.startRun()
	f.write(run, "line", 15, source{"web", 0}, source{"web", 1})
	f.end(run, horizon.RunFailed)
	path := "/v1/stacks/" + f.stack.String() + "/logs/stream?run=" + run.String()
	all := f.s.Stream(path, apitest.Req{Token: f.member}).Rest()
	if len(all) != 31 || all[30].Name != "end" {
		t.Fatalf("%d events, last %+v; want 30 lines and the end", len(all), all[len(all)-1])
	}
	for i := range len(all) - 1 {
		// Last-Event-ID as EventSource sends it, and ?last_event_id= as a new EventSource can.
		req := apitest.Req{Token: f.member, Headers: map[string]string{"Last-Event-ID": all[i].ID}}
		p := path
		if i%2 == 1 {
			req.Headers = nil
			p += "&last_event_id=" + all[i].ID
		}
		rest := f.s.Stream(p, req).Rest()
		if d := cmp.Diff(all[i+1:], rest); d != "" {
			t.Fatalf("resume after event %d (-want +got):\n%s", i, d)
		}
	}
}

// TestStreamFollowsIntoTheNextRun follows the stack's log with ?follow=true from before its
// first run: it waits for the run, reads it to its end, is told of the next run and reads that.
func TestStreamFollowsIntoTheNextRun(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	path := "/v1/stacks/" + f.stack.String() + "/logs/stream"
	if r := f.s.Do("GET", path, apitest.Req{Token: f.member}); r.Status != 404 {
		t.Fatalf("a stack without runs, not following: %d, want 404", r.Status)
	}
	st := f.s.Stream(path+"?follow=true", apitest.Req{Token: f.member})
	run1 := f.startRun()
	first := st.Next()
	if first.Name != "run" || first.ID != run1.String()+"/0-0" {
		t.Fatalf("first event %+v, want the run event of %s", first, run1)
	}
	f.write(run1, "one", 3, source{"web", 0})
	f.end(run1, horizon.RunFailed)
	got := st.Until(func(ev apitest.Event) bool { return ev.Name == "end" })
	run2 := f.startRun()
	f.write(run2, "two", 2, source{"web", 0})
	f.end(run2, horizon.RunSucceeded)
	got = append(got, st.Until(func(ev apitest.Event) bool { return ev.Name == "end" })...)
	want := []string{"one web#0 0", "one web#0 1", "one web#0 2", "<end>", "<run>", "two web#0 0", "two web#0 1", "<end>"}
	if d := cmp.Diff(want, texts(t, got)); d != "" {
		t.Fatalf("events (-want +got):\n%s", d)
	}
	if got[4].ID != run2.String()+"/0-0" || line(t, got[5]).Run != run2 {
		t.Fatalf("the second run's events: %+v %+v", got[4], got[5])
	}
	// A follower reconnecting with the id of the first run's end goes on with the second,
	// without that end again.
	afterEnd := f.s.Stream(path+"?follow=true", apitest.Req{Token: f.member, Headers: map[string]string{"Last-Event-ID": got[3].ID}})
	if d := cmp.Diff(want[4:], texts(t, afterEnd.Until(func(ev apitest.Event) bool { return ev.Name == "end" }))); d != "" {
		t.Fatalf("resumed after the first end (-want +got):\n%s", d)
	}
	// A follower reconnecting in the middle of the first run resumes there and goes on.
	resumed := f.s.Stream(path+"?follow=true", apitest.Req{Token: f.member, Headers: map[string]string{"Last-Event-ID": got[1].ID}})
	rest := resumed.Until(func(ev apitest.Event) bool { return ev.Name == "end" && strings.HasPrefix(ev.ID, run2.String()) })
	if d := cmp.Diff(want[2:], texts(t, rest)); d != "" {
		t.Fatalf("resumed follower (-want +got):\n%s", d)
	}
}

func TestStreamRefusals(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	run := f.startRun()
	f.s.FinishRun(run, horizon.RunFailed)
	later := f.startRun()
	other := f.s.NewStack(f.s.NewTeam("elsewhere"), "theirs")
	otherRun := f.s.NewRun(other)
	base := "/v1/stacks/" + f.stack.String() + "/logs/stream"
	tests := []struct {
		name    string
		path    string
		token   string
		headers map[string]string
		status  int
	}{
		{"another team's stack", base, f.outside, nil, 404},
		{"a missing stack", "/v1/stacks/" + uuid.NewString() + "/logs/stream", f.member, nil, 404},
		{"a run of another stack", base + "?run=" + otherRun.String(), f.member, nil, 404},
		{"a bad execution", base + "?execution=-1", f.member, nil, 400},
		{"a bad job", base + "?job=a%20b", f.member, nil, 400},
		{"a bad follow", base + "?follow=maybe", f.member, nil, 400},
		{"a malformed Last-Event-ID", base, f.member, map[string]string{"Last-Event-ID": "17-0"}, 400},
		{"a Last-Event-ID of another stack", base, f.member, map[string]string{"Last-Event-ID": otherRun.String() + "/1-0"}, 400},
		{"a Last-Event-ID of another run than ?run=", base + "?run=" + run.String(), f.member,
			map[string]string{"Last-Event-ID": later.String() + "/1-0"}, 400},
		{"no token", base, apitest.NoToken, nil, 401},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := f.s.Stream(tc.path, apitest.Req{Token: tc.token, Headers: tc.headers})
			if st.Status != tc.status {
				t.Fatalf("got %d %s, want %d", st.Status, st.Body, tc.status)
			}
		})
	}
}
