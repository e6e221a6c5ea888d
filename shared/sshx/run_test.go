package sshx_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"horizon/shared/sshx"
	"horizon/shared/sshx/sshxtest"
	"horizon/shared/testkit"
)

// notifyingBuffer is a concurrency-safe buffer that tests can wait on.
type notifyingBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	writes  []string
	changed chan struct{}
}

func newNotifyingBuffer() *notifyingBuffer {
	return &notifyingBuffer{changed: make(chan struct{}, 1)}
}

func (b *notifyingBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	b.buf.Write(p)
	b.writes = append(b.writes, string(p))
	b.mu.Unlock()
	select {
	case b.changed <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (b *notifyingBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor blocks until the buffer contains s, failing the test after 10 s.
func (b *notifyingBuffer) waitFor(t testing.TB, s string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for !strings.Contains(b.String(), s) {
		select {
		case <-b.changed:
		case <-timeout:
			t.Fatalf("output %q still lacks %q after 10s", b.String(), s)
		}
	}
}

func TestRun(t *testing.T) {
	t.Parallel()
	srv := sshxtest.Start(t, sshxtest.Options{AcceptEnv: func(name string) bool { return strings.HasPrefix(name, "HORIZON_") }})
	c := dial(t, config(t, srv))
	ctx := context.Background()

	t.Run("StreamsOutputAsItArrives", func(t *testing.T) {
		t.Parallel()
		stdout, stderr := newNotifyingBuffer(), newNotifyingBuffer()
		stdinR, stdinW := io.Pipe()
		ran := make(chan error, 1)
		go func() {
			ran <- c.Run(ctx, `echo first; echo warn >&2; read line; echo "second $line"`, sshx.RunOpts{
				Stdin: stdinR, Stdout: stdout, Stderr: stderr,
			})
		}()
		// The command is blocked on stdin, so this output can only have been streamed.
		stdout.waitFor(t, "first\n")
		stderr.waitFor(t, "warn\n")
		if _, err := io.WriteString(stdinW, "go\n"); err != nil {
			t.Fatalf("write stdin: %v", err)
		}
		if err := <-ran; err != nil {
			t.Fatalf("run: %v", err)
		}
		_ = stdinW.Close()
		if got, want := stdout.String(), "first\nsecond go\n"; got != want {
			t.Errorf("stdout %q, want %q", got, want)
		}
		if got, want := stderr.String(), "warn\n"; got != want {
			t.Errorf("stderr %q, want %q", got, want)
		}
	})

	t.Run("KeepsOrderWhenStreamsShareAWriter", func(t *testing.T) {
		t.Parallel()
		out := newNotifyingBuffer()
		if err := c.Run(ctx, `for i in 1 2 3 4 5; do echo $i; done`, sshx.RunOpts{Stdout: out, Stderr: out}); err != nil {
			t.Fatalf("run: %v", err)
		}
		if got, want := out.String(), "1\n2\n3\n4\n5\n"; got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	})

	t.Run("SetsEnvironment", func(t *testing.T) {
		t.Parallel()
		var out bytes.Buffer
		err := c.Run(ctx, `printf '%s|%s' "$HORIZON_A" "$HORIZON_B"`, sshx.RunOpts{
			Env:    map[string]string{"HORIZON_A": "two words", "HORIZON_B": "x=y"},
			Stdout: &out,
		})
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		if got, want := out.String(), "two words|x=y"; got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	})

	t.Run("RefusedVariableIsNamedButNotItsValue", func(t *testing.T) {
		t.Parallel()
		err := c.Run(ctx, "true", sshx.RunOpts{Env: map[string]string{"DB_PASSWORD": "hunter2"}})
		if err == nil || !strings.Contains(err.Error(), "DB_PASSWORD") || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("got %v, want an error naming DB_PASSWORD without its value", err)
		}
	})

	t.Run("ReportsExitStatus", func(t *testing.T) {
		t.Parallel()
		var stderr bytes.Buffer
		err := c.Run(ctx, "echo oops >&2; exit 3", sshx.RunOpts{Stderr: &stderr})
		var ee *sshx.ExitError
		if !errors.As(err, &ee) || ee.Status != 3 || ee.Signal != "" {
			t.Fatalf("got %v, want *ExitError with status 3", err)
		}
		if stderr.String() != "oops\n" {
			t.Errorf("stderr %q, want %q", stderr.String(), "oops\n")
		}
	})

	t.Run("ReportsKillingSignal", func(t *testing.T) {
		t.Parallel()
		err := c.Run(ctx, "kill -KILL $$", sshx.RunOpts{})
		var ee *sshx.ExitError
		if !errors.As(err, &ee) || ee.Signal != "KILL" || ee.Status != 128+9 {
			t.Fatalf("got %v, want *ExitError for signal KILL", err)
		}
	})
}

func TestRunCancel(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		cmd     string
		signals []string
	}{
		{name: "StopsOnTerm", cmd: "echo ready; sleep 30", signals: []string{"TERM"}},
		{name: "KillsCommandIgnoringTerm", cmd: "trap '' TERM; echo ready; sleep 30", signals: []string{"TERM", "KILL"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := sshxtest.Start(t, sshxtest.Options{})
			c := dial(t, config(t, srv))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			out := newNotifyingBuffer()
			ran := make(chan error, 1)
			go func() { ran <- c.Run(ctx, tc.cmd, sshx.RunOpts{Stdout: out, KillGrace: 300 * time.Millisecond}) }()
			out.waitFor(t, "ready\n")

			cancel()
			select {
			case err := <-ran:
				if !errors.Is(err, context.Canceled) {
					t.Errorf("got %v, want context.Canceled", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Run still running 10s after cancel")
			}
			testkit.Eventually(t, 5*time.Second, "server receives "+strings.Join(tc.signals, ", "), func() bool {
				return slices.Equal(srv.Signals(), tc.signals)
			})
			// The connection survives a cancelled command.
			if err := c.Run(context.Background(), "true", sshx.RunOpts{}); err != nil {
				t.Errorf("run after cancel: %v", err)
			}
		})
	}
}
