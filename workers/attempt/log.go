package attempt

import (
	"fmt"
	"strings"

	"horizon/shared/horizon"
	"horizon/shared/logstream"
)

// Log is one attempt's log: every line the step prints — a tool's output, Horizon's own
// messages — goes to its run's Redis stream and to log_lines, masked before it leaves the
// worker. Safe for concurrent use.
type Log struct {
	w    *logstream.Writer
	step horizon.Step
}

// Line writes one line of the step's output on fd.
func (l *Log) Line(fd logstream.FD, text string) {
	// The writer refuses a line only once it is closing, after the work returned: such a line
	// has nowhere else to go.
	_ = l.w.Line(l.step.ID, l.step.Job, deref(l.step.ExecutionIndex), fd, text)
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
