package steps

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"horizon/shared/horizon"
	"horizon/shared/secrets"
	"horizon/shared/terraform"
)

// LogFactory opens the deploy log of a step: every line a step prints — Terraform's output,
// its scripts' output, Horizon's own messages — goes through it, masked before it leaves the
// worker.
type LogFactory interface {
	Open(run, stack uuid.UUID, step horizon.Step, masker *secrets.Masker) LogWriter
}

// LogWriter receives one step's lines. fd is "stdout", "stderr" or "horizon".
type LogWriter interface {
	Line(fd, text string)
	Close(ctx context.Context) error
}

// stepLog is a step's log with helpers for the sources that write to it.
type stepLog struct {
	w LogWriter
}

// horizon writes one of Horizon's own messages.
func (l *stepLog) horizon(format string, args ...any) {
	l.w.Line("horizon", fmt.Sprintf(format, args...))
}

// terraform is the Sink of a Terraform work dir.
func (l *stepLog) terraform(stream terraform.Stream, line string) {
	l.w.Line(string(stream), line) // the streams are named like the log's fds
}

// lineWriter turns a byte stream (a script's stdout or stderr) into log lines, and remembers
// the last line that was not blank: a script's last word on stderr is usually why it failed.
type lineWriter struct {
	log  *stepLog
	fd   string
	part []byte
	last string
}

func (lw *lineWriter) Write(p []byte) (int, error) {
	for _, b := range p {
		if b == '\n' {
			lw.line()
			continue
		}
		lw.part = append(lw.part, b)
		if len(lw.part) >= 64<<10 {
			lw.line()
		}
	}
	return len(p), nil
}

func (lw *lineWriter) line() {
	s := string(lw.part)
	lw.log.w.Line(lw.fd, s)
	if strings.TrimSpace(s) != "" {
		lw.last = s
	}
	lw.part = lw.part[:0]
}

// Flush writes a last line without a newline.
func (lw *lineWriter) Flush() {
	if len(lw.part) > 0 {
		lw.line()
	}
}
