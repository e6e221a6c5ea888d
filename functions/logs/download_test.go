package logs_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"horizon/functions/apitest"
	"horizon/shared/horizon"
	"horizon/shared/logstream"
)

func TestDownloadTextAndNDJSONWithFilters(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	run1 := f.startRun()
	f.write(run1, "one", 2, source{"web", 0}, source{"web", 1}, source{"", 0})
	f.end(run1, horizon.RunFailed)
	run2 := f.startRun()
	f.write(run2, "two", 1, source{"web", 1})
	base := "/v1/stacks/" + f.stack.String() + "/logs"

	text := f.s.Do("GET", base, apitest.Req{Token: f.viewer})
	if text.Status != 200 || text.Header.Get("Content-Type") != "text/plain; charset=utf-8" ||
		!strings.HasPrefix(text.Header.Get("Content-Disposition"), "attachment;") {
		t.Fatalf("text download: %d %v", text.Status, text.Header)
	}
	var shape []string
	for l := range strings.Lines(string(text.Body)) {
		if f := strings.SplitN(strings.TrimSuffix(l, "\n"), " ", 2); !strings.HasPrefix(l, "==") {
			shape = append(shape, f[1]) // without the time
		} else {
			shape = append(shape, strings.TrimSuffix(l, "\n"))
		}
	}
	want := []string{"== run " + run1.String() + " ==",
		"web#0 stdout one web#0 0", "web#1 stdout one web#1 0", "- stdout one #0 0",
		"web#0 stdout one web#0 1", "web#1 stdout one web#1 1", "- stdout one #0 1",
		"== run " + run2.String() + " ==", "web#1 stdout two web#1 0"}
	if d := cmp.Diff(want, shape); d != "" {
		t.Fatalf("text (-want +got):\n%s", d)
	}

	nd := f.s.Do("GET", base+"?job=web&execution=1&run="+run1.String(), apitest.Req{Token: f.member, Headers: map[string]string{"Accept": "application/x-ndjson"}})
	if nd.Status != 200 || nd.Header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("ndjson download: %d %v", nd.Status, nd.Header)
	}
	var got []string
	for l := range strings.Lines(string(nd.Body)) {
		var line logstream.Line
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			t.Fatalf("ndjson line %q: %v", l, err)
		}
		if line.Run != run1 || line.Job != "web" || line.Execution != 1 {
			t.Fatalf("line %+v passed the filter", line)
		}
		got = append(got, line.Text)
	}
	if d := cmp.Diff([]string{"one web#1 0", "one web#1 1"}, got); d != "" {
		t.Fatalf("ndjson (-want +got):\n%s", d)
	}

	otherRun := f.s.NewRun(f.s.NewStack(f.s.NewTeam("elsewhere"), "theirs"))
	for name, tc := range map[string]struct {
		path, token, accept string
		status              int
	}{
		"another team's stack":   {base, f.outside, "", 404},
		"a run of another stack": {base + "?run=" + otherRun.String(), f.member, "", 404},
		"a malformed run":        {base + "?run=nope", f.member, "", 400},
		"a bad execution":        {base + "?execution=x", f.member, "", 400},
		"a tail of no run":       {base + "?tail=10", f.member, "", 400},
		"a tail of zero":         {base + "?run=" + run1.String() + "&tail=0", f.member, "", 400},
		"a tail too long":        {base + "?run=" + run1.String() + "&tail=10001", f.member, "", 400},
		"a malformed before":     {base + "?run=" + run1.String() + "&before=12", f.member, "", 400},
		"an unacceptable format": {base, f.member, "application/json", 406},
		"a missing stack":        {"/v1/stacks/" + uuid.NewString() + "/logs", f.member, "", 404},
	} {
		r := f.s.Do("GET", tc.path, apitest.Req{Token: tc.token, Headers: map[string]string{"Accept": tc.accept}})
		if r.Status != tc.status {
			t.Errorf("%s: got %d %s, want %d", name, r.Status, r.Body, tc.status)
		}
	}
}

// TestDownloadOfAMillionLinesStreams downloads a run of a million stored lines over HTTP and
// samples the process's heap meanwhile: the server never holds the log whole.
func TestDownloadOfAMillionLinesStreams(t *testing.T) {
	f := newFixture(t, nil)
	run := f.startRun()
	const n = 1_000_000
	// Rows made by Postgres itself: a Writer would take a while to write as many.
	if _, err := f.s.DB.Exec(t.Context(), `INSERT INTO log_lines (run_id, stream_ms, stream_seq, stack_id, job, execution, at, fd, text)
		SELECT $1, 1700000000000 + i / 100, i % 100, $2, 'web', i % 3, now(), 'stdout', 'line ' || i || ' ' || repeat('x', 80)
		FROM generate_series(0, $3 - 1) AS i`, run, f.stack, n); err != nil {
		t.Fatal(err)
	}
	for _, accept := range []string{"text/plain", "application/x-ndjson"} {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		base, peak := ms.HeapAlloc, ms.HeapAlloc
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			for {
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapAlloc)
				select {
				case <-stop:
					return
				case <-time.After(5 * time.Millisecond):
				}
			}
		})
		req, _ := http.NewRequest("GET", f.s.URL+"/v1/stacks/"+f.stack.String()+"/logs?run="+run.String(), nil)
		req.Header.Set("Authorization", "Bearer "+f.member)
		req.Header.Set("Accept", accept)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var lines, bytes int64
		buf := make([]byte, 64<<10)
		for {
			k, err := res.Body.Read(buf)
			bytes += int64(k)
			lines += int64(strings.Count(string(buf[:k]), "\n"))
			if err != nil {
				break
			}
		}
		_ = res.Body.Close() // read to the end
		close(stop)
		wg.Wait()
		if res.StatusCode != 200 || lines != n {
			t.Fatalf("%s: %d, %d lines, want 200 and %d", accept, res.StatusCode, lines, n)
		}
		growth := float64(peak-base) / (1 << 20)
		fmt.Printf("GET …/logs of %d lines as %s: %.0f MB sent, peak heap %.1f MB over the %.1f MB before (client and server in one process)\n",
			n, accept, float64(bytes)/1e6, growth, float64(base)/(1<<20))
		if growth > 32 {
			t.Fatalf("%s: the heap grew by %.0f MB during the download", accept, growth)
		}
	}
}
