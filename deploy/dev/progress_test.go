package main

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestProgressTalksThroughALongStep: a step announces itself with its expected duration,
// speaks up while it runs, and says when it is done; a failed step does not claim success.
func TestProgressTalksThroughALongStep(t *testing.T) {
	t.Parallel()
	out := &lockedBuffer{}
	p := &progress{out: out, total: 2, every: 10 * time.Millisecond}
	err := p.step("building the API", "first time 1-3 min", func() error {
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(out.String(), "still building the API") && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	broken := errors.New("broken")
	if err := p.step("building the workers", "", func() error { return broken }); !errors.Is(err, broken) {
		t.Fatalf("step error: %v", err)
	}
	got := out.String()
	for _, want := range []string{"up [1/2] building the API (first time 1-3 min)\n", "up [1/2] … still building the API (", "up [1/2] done in ", "up [2/2] building the workers\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "up [2/2] done") {
		t.Errorf("a failed step said done:\n%s", got)
	}
}
