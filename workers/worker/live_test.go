package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"horizon/functions/apitest"
	"horizon/functions/apitest/labtest"
	"horizon/shared/auth"
	"horizon/shared/events"
	"horizon/shared/logstream"
	"horizon/shared/rstream"
	"horizon/shared/testkit"
)

// TestLiveTrackingOfADeploy follows a deploy of the sandbox example, and a run-again after it,
// with real SSE clients: the stack's events arrive in order and resume exactly from any
// Last-Event-ID, also for curl -N; a viewer with a browser's stream token sees the same; a
// viewer of another team sees nothing of it; a log stream filtered to one execution follows from
// before the first run into the next one, shows only that execution and matches the download
// and curl -N; /metrics shows what the deploy did.
func TestLiveTrackingOfADeploy(t *testing.T) {
	t.Parallel()
	e := newEngine(t, engineOpts{})
	stack := e.Draft("live", 1)
	team := mustUUID(t, e.Team)
	_, viewer := e.API.NewUser(auth.RoleViewer, team)
	others := e.API.NewTeam("others")
	_, outsider := e.API.NewUser(auth.RoleViewer, others)
	tok := e.API.Do("POST", "/v1/stream-tokens", apitest.Req{Token: viewer, Body: map[string]any{"purpose": "events"}}).Map()["token"].(string)

	mine := e.API.Stream("/v1/events?stack="+stack, apitest.Req{Token: e.Member})
	browser := e.API.Stream("/v1/events?stream_token="+tok, apitest.Req{Token: apitest.NoToken})
	outside := e.API.Stream("/v1/events", apitest.Req{Token: outsider})
	logs := e.API.Stream("/v1/stacks/"+stack+"/logs/stream?follow=true&job=app&execution=0", apitest.Req{Token: e.Member})
	// Three event streams, and the log stream waiting for the stack's first run.
	testkit.Eventually(t, 10*time.Second, "streams following", func() bool { return e.API.Deps.EventHub.Stats().Members == 4 })

	if r := e.API.Do("POST", "/v1/stacks/"+stack+"/deploy", apitest.Req{Token: e.Member}); r.Status != 202 {
		t.Fatalf("deploy: %d %s", r.Status, r.Body)
	}
	deployed := func(ev apitest.Event) bool {
		var x events.Event
		return ev.Name == "event" && json.Unmarshal([]byte(ev.Data), &x) == nil && x.Type == events.Stack && x.State == "deployed"
	}
	got := mine.Until(deployed)
	checkDeployEvents(t, got, stack)
	if d := cmp.Diff(ids(got), ids(browser.Until(deployed))); d != "" {
		t.Errorf("the team viewer's stream-token stream differs from the member's (-member +viewer):\n%s", d)
	}
	for _, k := range []int{0, len(got) / 3, len(got) / 2, len(got) - 2} {
		again := e.API.Stream("/v1/events?stack="+stack, apitest.Req{Token: e.Member, Headers: map[string]string{"Last-Event-ID": got[k].ID}})
		if d := cmp.Diff(got[k+1:], again.Until(deployed)); d != "" {
			t.Fatalf("resume after event %d of %d (-want +got):\n%s", k, len(got), d)
		}
		again.Close()
	}

	// curl -N sees the same events, resumed from the first.
	curl := exec.Command("curl", "-sSN", "-H", "Authorization: Bearer "+e.Member, "-H", "Last-Event-ID: "+got[0].ID,
		e.API.URL+"/v1/events?stack="+stack)
	stdout, err := curl.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := curl.Start(); err != nil {
		t.Fatalf("curl -N: %v", err)
	}
	var curled []apitest.Event
	err = apitest.ReadEvents(stdout, func(ev apitest.Event) bool { curled = append(curled, ev); return !deployed(ev) })
	_ = curl.Process.Kill() // the event stream does not end by itself
	_ = curl.Wait()         // killed: its exit status says so
	if d := cmp.Diff(got[1:], curled); err != nil || d != "" {
		t.Fatalf("curl -N of the events (%v) (-client +curl):\n%s", err, d)
	}

	// The log: the run is announced, then app[0]'s lines only, then the end.
	run1 := logs.Next()
	if run1.Name != "run" {
		t.Fatalf("the first log event is %+v, want the run", run1)
	}
	runID := strings.TrimSuffix(run1.ID, "/0-0")
	first := logs.Until(func(ev apitest.Event) bool { return ev.Name == "end" })
	lines := checkExecutionLog(t, first, runID)
	download := e.API.Do("GET", "/v1/stacks/"+stack+"/logs?job=app&execution=0&run="+runID, apitest.Req{Token: viewer,
		Headers: map[string]string{"Accept": "application/x-ndjson"}})
	var stored []logstream.Line
	for l := range strings.Lines(string(download.Body)) {
		var line logstream.Line
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			t.Fatalf("ndjson %q: %v", l, err)
		}
		stored = append(stored, line)
	}
	if d := cmp.Diff(lines, stored); d != "" {
		t.Errorf("the streamed log differs from the download (-stream +download):\n%s", d)
	}

	// curl -N reads the same stream as a command-line client.
	out, err := exec.Command("curl", "-sSN", "--max-time", "60", "-H", "Authorization: Bearer "+e.Member,
		e.API.URL+"/v1/stacks/"+stack+"/logs/stream?job=app&execution=0&run="+runID).Output()
	if err != nil {
		t.Fatalf("curl -N: %v", err)
	}
	var viaCurl []apitest.Event
	if err := apitest.ReadEvents(strings.NewReader(string(out)), func(ev apitest.Event) bool { viaCurl = append(viaCurl, ev); return true }); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(first, viaCurl); d != "" {
		t.Errorf("curl -N (-client +curl):\n%s", d)
	}

	// The follower goes on into the next run.
	again := e.API.Do("POST", "/v1/stacks/"+stack+"/jobs/app/executions/0/run-again", apitest.Req{Token: e.Member})
	if again.Status != 202 {
		t.Fatalf("run again: %d %s", again.Status, again.Body)
	}
	run2 := logs.Next()
	if run2.Name != "run" || run2.ID != again.Map()["id"].(string)+"/0-0" {
		t.Fatalf("after the end got %+v, want the run-again's run event", run2)
	}
	second := logs.Until(func(ev apitest.Event) bool { return ev.Name == "end" })
	checkExecutionLog(t, second, again.Map()["id"].(string))
	t.Logf("deploy: %d events; app[0]'s log: %d lines in the deploy, %d in the run-again", len(got), len(first)-1, len(second)-1)
	e.waitState(stack, "deployed", 3*time.Minute)

	// Nothing of this reached the other team's viewer: the first event it gets is its own.
	sentinel, err := e.API.Deps.Events.Publish(context.Background(), events.Event{Type: events.Stack, ID: uuid.New(), StackID: uuid.New(), TeamID: others, State: "draft"})
	if err != nil {
		t.Fatal(err)
	}
	if ev := outside.Next(); ev.ID != sentinel.String() {
		t.Fatalf("the other team's viewer got %+v before its own event", ev)
	}

	ttl, err := e.API.Redis.TTL(context.Background(), e.API.Deps.Namespace+":log:"+runID).Result()
	if err != nil || ttl < 6*24*time.Hour {
		t.Errorf("the finished run's log stream expires in %v (%v), want the 7 d retention", ttl, err)
	}
	metrics := string(e.API.Do("GET", "/metrics", apitest.Req{Token: apitest.NoToken}).Body)
	for _, re := range []string{
		`horizon_gate_wait_seconds_count\{node="` + e.Server + `/pve1"\} [1-9]`,
		`horizon_log_lines_total [1-9]`,
		`horizon_steps\{state="running"\} 0`,
		`horizon_queue_tasks\{queue="[^"]+-build",state="pending"\} \d`,
		`horizon_queue_latency_seconds\{queue="[^"]+-control"\}`,
		`horizon_sse_connections\{stream="logs"\} 1`,
		`horizon_http_request_duration_seconds_count\{method="GET",route="/v1/stacks/:id/logs/stream",status="200"\} [1-9]`,
		`horizon_http_request_duration_seconds_count\{method="POST",route="/v1/stacks/:id/deploy",status="202"\} 1`,
	} {
		if !regexp.MustCompile(re).MatchString(metrics) {
			t.Errorf("/metrics lacks %s", re)
		}
	}
}

// checkDeployEvents checks the order of a deploy's events: ids increasing, the stack's
// deploying first and deployed last, each step queued before running before succeeded, and the
// database's steps done before the app's start (phases).
func checkDeployEvents(t *testing.T, got []apitest.Event, stack string) {
	t.Helper()
	var prev rstream.ID
	steps := map[uuid.UUID][]string{}
	dbDone, appStarted := -1, -1
	var runStates []string
	for i, ev := range got {
		id, err := rstream.ParseID(ev.ID)
		if err != nil || !prev.Less(id) {
			t.Fatalf("event %d id %q after %v: not increasing", i, ev.ID, prev)
		}
		prev = id
		var x events.Event
		if err := json.Unmarshal([]byte(ev.Data), &x); err != nil || x.StackID.String() != stack {
			t.Fatalf("event %d: %s (%v)", i, ev.Data, err)
		}
		switch x.Type {
		case events.Step:
			steps[x.ID] = append(steps[x.ID], x.State)
			if x.Job == "db" && x.State == "succeeded" {
				dbDone = i
			}
			if x.Job == "app" && x.State == "running" && appStarted < 0 {
				appStarted = i
			}
		case events.Run:
			runStates = append(runStates, x.State)
		}
	}
	var first events.Event
	_ = json.Unmarshal([]byte(got[0].Data), &first) // decoded above
	if first.Type != events.Stack || first.State != "deploying" {
		t.Errorf("the first event is %s %s, want the stack deploying", first.Type, first.State)
	}
	if len(steps) != 2 {
		t.Errorf("events of %d steps, want db[0] and app[0]", len(steps))
	}
	for id, states := range steps {
		if s := strings.Join(states, ">"); !regexp.MustCompile(`^(queued>)?running>succeeded$`).MatchString(s) {
			t.Errorf("step %s went %s", id, s)
		}
	}
	if dbDone < 0 || appStarted < dbDone {
		t.Errorf("app started at event %d, db done at %d: want the phases in order", appStarted, dbDone)
	}
	if s := strings.Join(runStates, ">"); !strings.HasPrefix(s, "queued>") || !strings.HasSuffix(s, ">succeeded") {
		t.Errorf("the run went %s", s)
	}
}

// checkExecutionLog checks a run's log events for one execution (app[0]) and returns its lines.
func checkExecutionLog(t *testing.T, evs []apitest.Event, run string) []logstream.Line {
	t.Helper()
	var lines []logstream.Line
	for _, ev := range evs[:len(evs)-1] {
		var l logstream.Line
		if err := json.Unmarshal([]byte(ev.Data), &l); err != nil || ev.Name != "line" {
			t.Fatalf("event %+v: %v", ev, err)
		}
		if l.Job != "app" || l.Execution != 0 || l.Run.String() != run || ev.ID != fmt.Sprintf("%s/%s", run, l.ID) {
			t.Fatalf("line %+v (id %s) in the log of app[0] of run %s", l, ev.ID, run)
		}
		lines = append(lines, l)
	}
	if len(lines) < 5 {
		t.Fatalf("only %d lines for app[0]", len(lines))
	}
	if end := evs[len(evs)-1]; !strings.Contains(end.Data, `"status":"succeeded"`) || !strings.HasPrefix(end.ID, run+"/") {
		t.Fatalf("end %+v", end)
	}
	return lines
}

func ids(evs []apitest.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.ID
	}
	return out
}

// followLog reads a run's log stream to its end as EventSource would: on "lagging" it
// reconnects from the id it names. It returns the lines' texts in order and how many times it
// had to resume.
func (e *engine) followLog(stack, run, lastEventID string) (texts []string, resumes int) {
	t := e.t
	t.Helper()
	path := "/v1/stacks/" + stack + "/logs/stream?run=" + run
	for {
		headers := map[string]string{}
		if lastEventID != "" {
			headers["Last-Event-ID"] = lastEventID
		}
		events := e.API.Stream(path, apitest.Req{Token: e.Member, Headers: headers}).Rest()
		if len(events) == 0 {
			t.Fatalf("the log stream of run %s ended without an event", run)
		}
		for _, ev := range events {
			switch ev.Name {
			case "line":
				var l logstream.Line
				if err := json.Unmarshal([]byte(ev.Data), &l); err != nil {
					t.Fatal(err)
				}
				texts = append(texts, l.Text)
			case "end":
				return texts, resumes
			case "lagging":
				resumes++
				lastEventID = ev.ID
			}
		}
		if last := events[len(events)-1]; last.Name != "lagging" {
			t.Fatalf("the log stream ended with %+v, neither end nor lagging", last)
		}
	}
}

// TestChattyScriptIsFollowedToItsLastLine: a script prints 30 000 lines. A follower that reads
// the run's log to its end — live from the start, or resumed from the middle — gets exactly the
// lines of the download. The run's end used to be written while the step's log was still
// flushing, and followers stopped thousands of lines short.
func TestChattyScriptIsFollowedToItsLastLine(t *testing.T) {
	t.Parallel()
	e := newEngine(t, engineOpts{override: map[string]string{labtest.AppScript: labtest.AppScriptWith(t, "seq -f 'chatty line %g' 30000\n")}})
	stack := e.Draft("chatty", 1)
	live := e.API.Stream("/v1/stacks/"+stack+"/logs/stream?follow=true", apitest.Req{Token: e.Member})
	testkit.Eventually(t, 10*time.Second, "the follower waits for the first run", func() bool { return e.API.Deps.EventHub.Stats().Members == 1 })
	r := e.API.Do("POST", "/v1/stacks/"+stack+"/deploy", apitest.Req{Token: e.Member})
	if r.Status != 202 {
		t.Fatalf("deploy: %d %s", r.Status, r.Body)
	}
	run := r.Map()["id"].(string)
	if ev := live.Next(); ev.Name != "run" {
		t.Fatalf("first event %+v, want the run", ev)
	}
	var followed []string
	lagged := false
	for ev := live.Next(); ev.Name != "end"; ev = live.Next() {
		if ev.Name == "lagging" {
			lagged = true // resumed below, as EventSource would
			rest, _ := e.followLog(stack, run, ev.ID)
			followed = append(followed, rest...)
			break
		}
		var l logstream.Line
		if err := json.Unmarshal([]byte(ev.Data), &l); err != nil {
			t.Fatalf("event %+v: %v", ev, err)
		}
		followed = append(followed, l.Text)
	}
	e.waitState(stack, "deployed", 3*time.Minute)

	var stored []string
	download := e.API.Do("GET", "/v1/stacks/"+stack+"/logs?run="+run, apitest.Req{Token: e.Member, Headers: map[string]string{"Accept": "application/x-ndjson"}})
	for l := range strings.Lines(string(download.Body)) {
		var line logstream.Line
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			t.Fatalf("ndjson %q: %v", l, err)
		}
		stored = append(stored, line.Text)
	}
	if n := strings.Count(strings.Join(stored, "\n"), "chatty line "); n != 30000 {
		t.Fatalf("the download has %d chatty lines, want 30000", n)
	}
	if d := cmp.Diff(stored, followed); d != "" {
		t.Fatalf("the live follower (lagged: %v) got %d lines, the download has %d (-download +followed):\n%.2000s", lagged, len(followed), len(stored), d)
	}
	// Resumed from the middle of the log, a follower gets exactly the rest.
	var middleID string
	for i, ev := range e.API.Stream("/v1/stacks/"+stack+"/logs/stream?run="+run, apitest.Req{Token: e.Member}).Rest() {
		if i == len(stored)/2 {
			middleID = ev.ID
			break
		}
	}
	rest, resumes := e.followLog(stack, run, middleID)
	if d := cmp.Diff(stored[len(stored)/2+1:], rest); d != "" {
		t.Fatalf("resumed after line %d (%d more resumes on lagging) (-download +followed):\n%.2000s", len(stored)/2, resumes, d)
	}
	t.Logf("%d lines; the live follower lagged: %v; the resumed one resumed %d more times", len(stored), lagged, resumes)
}
