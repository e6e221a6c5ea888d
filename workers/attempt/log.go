package attempt

import (
	"fmt"
	"strings"
	"sync"

	"horizon/shared/horizon"
	"horizon/shared/logstream"
)

// Log is one attempt's log: every line the step prints — a tool's output, Horizon's own
// messages — goes to its run's Redis stream and to log_lines, masked before it leaves the
// worker. Safe for concurrent use.
//
// Until the attempt owns the step, the lines (a Preparer's) are held: open gives the log its
// writer and release passes them on; an attempt that never owns the step drops them.
type Log struct {
	step horizon.Step

	mu      sync.Mutex
	w       *logstream.Writer
	holding bool
	held    []heldLine
}

type heldLine struct {
	fd   logstream.FD
	text string
}

// Line writes one line of the step's output on fd.
func (l *Log) Line(fd logstream.FD, text string) {
	l.mu.Lock()
	if l.w == nil || l.holding {
		l.held = append(l.held, heldLine{fd, text})
		l.mu.Unlock()
		return
	}
	w := l.w
	l.mu.Unlock()
	l.write(w, fd, text)
}

// write passes one line on. The writer refuses a line only once it is closing, after the work
// returned: such a line has nowhere else to go.
func (l *Log) write(w *logstream.Writer, fd logstream.FD, text string) {
	_ = w.Line(l.step.ID, l.step.Job, deref(l.step.ExecutionIndex), fd, text)
}

// open gives the log its writer. Lines stay held until release: a Preparer may still be
// writing, and the attempt's own first lines (sayFirst) come before its.
func (l *Log) open(w *logstream.Writer) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.w, l.holding = w, true
}

// sayFirst writes one of Horizon's own messages ahead of the lines held.
func (l *Log) sayFirst(format string, args ...any) {
	l.write(l.w, logstream.Horizon, fmt.Sprintf(format, args...))
}

// release passes the held lines on, and every later line directly.
func (l *Log) release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, h := range l.held {
		l.write(l.w, h.fd, h.text)
	}
	l.held, l.holding = nil, false
}

// Say writes one of Horizon's own messages.
func (l *Log) Say(format string, args ...any) {
	l.Line(logstream.Horizon, fmt.Sprintf(format, args...))
}

// FirstLine is an error's first line, at most 500 bytes: what a failed card shows.
func FirstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 500 {
		s = s[:500]
	}
	return s
}
