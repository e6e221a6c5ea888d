package steps

import (
	"context"
	"strings"
	"sync"
	"time"

	"horizon/shared/logstream"
	"horizon/shared/secrets"
	"horizon/workers/attempt"
)

// addMask is the line a script prints to declare a secret before it prints it (as GitHub
// Actions' workflow command): "::add-mask::<value>". The value joins the step's masker at
// once, so the line itself and every later line show it masked.
const addMask = "::add-mask::"

// scriptLog passes a running script's lines on to the step's log only once the secret outputs
// the script has written so far have joined the masker. A script writes a secret to
// $HORIZON_SECRET_OUTPUT before it can print it, so a line that prints it arrives after the
// write, and the read of the file that follows the line's arrival finds the value: no line
// reaches the live stream, the stored log or a download with a secret output in clear. Lines
// wait at most scriptLogDelay (plus one read over SSH) before they are passed on.
type scriptLog struct {
	log     *attempt.Log
	masker  *secrets.Masker
	secrets func(context.Context) (map[string]string, error) // the secret outputs so far

	mu      sync.Mutex
	pending []scriptLine
	kick    chan struct{}
	done    chan struct{}
	stopped chan struct{}
}

type scriptLine struct {
	fd   logstream.FD
	text string
}

// scriptLogDelay is how long lines gather before the secret outputs are read again, and
// readSecretsTimeout bounds one read.
const (
	scriptLogDelay     = 200 * time.Millisecond
	readSecretsTimeout = 30 * time.Second
)

func newScriptLog(ctx context.Context, log *attempt.Log, masker *secrets.Masker, read func(context.Context) (map[string]string, error)) *scriptLog {
	l := &scriptLog{log: log, masker: masker, secrets: read, kick: make(chan struct{}, 1), done: make(chan struct{}),
		stopped: make(chan struct{})}
	go l.run(ctx)
	return l
}

// line queues one line of the script's output.
func (l *scriptLog) line(fd logstream.FD, text string) {
	if v, ok := strings.CutPrefix(strings.TrimSpace(text), addMask); ok {
		l.masker.Add(strings.TrimSpace(v))
	}
	l.mu.Lock()
	l.pending = append(l.pending, scriptLine{fd, text})
	first := len(l.pending) == 1
	l.mu.Unlock()
	if first {
		select {
		case l.kick <- struct{}{}:
		default:
		}
	}
}

func (l *scriptLog) run(ctx context.Context) {
	defer close(l.stopped)
	for {
		select {
		case <-l.done:
			l.flush(ctx, true)
			return
		case <-l.kick:
		}
		select {
		case <-l.done:
		case <-time.After(scriptLogDelay):
		}
		if !l.flush(ctx, false) {
			// The read failed: try again after the delay, keeping the lines.
			select {
			case l.kick <- struct{}{}:
			default:
			}
		}
	}
}

// flush reads the secret outputs, then passes on every line queued before the read began. When
// the read fails the lines stay queued (false); on the last flush they are withheld instead,
// since they cannot be checked against secrets the script may have written.
func (l *scriptLog) flush(ctx context.Context, last bool) bool {
	l.mu.Lock()
	n := len(l.pending)
	l.mu.Unlock()
	if n == 0 {
		return true
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readSecretsTimeout)
	values, err := l.secrets(rctx)
	cancel()
	if err != nil && !last {
		return false
	}
	for _, v := range values {
		l.masker.Add(v)
	}
	l.mu.Lock()
	lines := l.pending[:n:n]
	l.pending = append([]scriptLine(nil), l.pending[n:]...)
	l.mu.Unlock()
	if err != nil {
		l.log.Say("%d line(s) of script output withheld: the secret outputs could not be read to mask them (%v)", len(lines), err)
		return false
	}
	for _, s := range lines {
		l.log.Line(s.fd, s.text)
	}
	return true
}

// close passes on what is left, after a last read of the secret outputs.
func (l *scriptLog) close() {
	close(l.done)
	<-l.stopped
}
