package logs_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"horizon/functions/apitest"
	"horizon/functions/stream"
	"horizon/shared/horizon"
	"horizon/shared/testkit"
)

// pausedConn opens path as an event stream on a raw connection with a 4 KiB receive buffer and
// does not read it: a client that paused.
func pausedConn(t testing.TB, s *apitest.Server, path, token string) (net.Conn, *http.Request) {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		if err != nil {
			return err
		}
		return serr
	}}
	conn, err := d.Dial("tcp", strings.TrimPrefix(s.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() }) // the test is over either way
	req, _ := http.NewRequest(http.MethodGet, s.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	if err := req.Write(conn); err != nil {
		t.Fatal(err)
	}
	return conn, req
}

// TestPausedReaderIsDroppedNotBuffered pauses a client on a run's log while many lines are
// written: the server's buffer for it never exceeds its bound, the client is dropped instead
// of buffered for, and once it reads again it gets what was sent, a final "lagging" event, and
// resumes from its id with exactly the rest.
func TestPausedReaderIsDroppedNotBuffered(t *testing.T) {
	t.Parallel()
	const buffer = 64 << 10
	f := newFixture(t, &apitest.Options{StreamBuffer: buffer, SendBuffer: 8 << 10})
	run := f.startRun()
	path := "/v1/stacks/" + f.stack.String() + "/logs/stream?run=" + run.String()
	conn, req := pausedConn(t, f.s, path, f.member)
	hub := f.s.Deps.LogHub
	testkit.Eventually(t, 10*time.Second, "the paused client follows the run", func() bool { return hub.Stats().Members == 1 })

	// Far more lines than the small receive window, the server's socket buffer and the hub's
	// buffer hold together.
	const n = 20_000
	peak, heapBefore := 0, liveHeap()
	var heapPeak uint64
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.write(run, "line", n, source{"web", 0})
	}()
	for sampling := true; sampling; {
		select {
		case <-done:
			sampling = false
		case <-time.After(time.Millisecond):
		}
		peak = max(peak, hub.Stats().Buffered)
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		heapPeak = max(heapPeak, ms.HeapAlloc)
	}
	testkit.Eventually(t, 30*time.Second, "the paused client dropped as lagging", func() bool { return hub.Stats().Dropped == 1 })
	f.end(run, horizon.RunSucceeded)
	// One XREAD batch (512 lines of ~190 bytes) may come on top of the buffer.
	if limit := buffer + 512*256; peak > limit {
		t.Fatalf("the hub held %d bytes for the paused client, more than its %d-byte bound", peak, limit)
	}
	t.Logf("paused client: hub buffer peak %d bytes (bound %d); test process heap peak %.1f MB over %.1f MB before (the writer's own buffer is 8 MB)",
		peak, buffer, float64(heapPeak-min(heapPeak, heapBefore))/(1<<20), float64(heapBefore)/(1<<20))

	res, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(res.Body)
		t.Fatalf("the paused client's stream answered %d %s", res.StatusCode, body)
	}
	var first []apitest.Event
	if err := apitest.ReadEvents(res.Body, func(ev apitest.Event) bool { first = append(first, ev); return true }); err != nil {
		t.Fatalf("after %d events: %v", len(first), err)
	}
	if len(first) == 0 {
		t.Fatal("the paused client got no event, want a final lagging")
	}
	// Lagging names the last line the client got: the start of the run when the burst filled
	// the buffer before the stream sent anything (it happens under -race).
	last, resumeAt := first[len(first)-1], run.String()+"/0-0"
	if len(first) > 1 {
		resumeAt = first[len(first)-2].ID
	}
	if last.Name != "lagging" || last.ID != resumeAt {
		t.Fatalf("the paused client's last event is %+v, want lagging at the last line it got (%s)", last, resumeAt)
	}
	rest := f.s.Stream(path, apitest.Req{Token: f.member, Headers: map[string]string{"Last-Event-ID": last.ID}}).Rest()
	got := texts(t, append(first[:len(first)-1], rest...))
	want := append(numbered("line", "web#0", n), "<end>")
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("lines across the lagging resume (-want +got):\n%s", d)
	}
	t.Logf("the paused client got %d lines before it was dropped, %d after resuming", len(first)-1, len(rest)-1)
}

func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestStalledClientIsCutAfterTheWriteTimeout: a client that accepts no bytes for the write
// timeout is disconnected, so that its goroutines and buffers go too.
func TestStalledClientIsCutAfterTheWriteTimeout(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &apitest.Options{Streams: stream.Config{WriteTimeout: 200 * time.Millisecond}, SendBuffer: 8 << 10})
	run := f.startRun()
	pausedConn(t, f.s, "/v1/stacks/"+f.stack.String()+"/logs/stream?run="+run.String(), f.member)
	streams := f.s.Deps.Streams
	testkit.Eventually(t, 10*time.Second, "the stalled client follows", func() bool { return f.s.Deps.LogHub.Stats().Members == 1 })
	// Enough to fill what the connection holds, so that the server's writes block.
	f.write(run, "line", 5000, source{"web", 0})
	testkit.Eventually(t, 30*time.Second, "the stalled client cut", func() bool { return streams.Open() == 0 })
	if m := f.s.Deps.LogHub.Stats().Members; m != 0 {
		t.Fatalf("%d members still follow the run", m)
	}
}
