package steps

import (
	"context"

	"github.com/google/uuid"

	"horizon/shared/horizon"
	"horizon/shared/logstream"
	"horizon/shared/secrets"
)

// StreamLogs is the LogFactory of production: each step's lines go to its run's Redis stream
// and to log_lines, masked first.
type StreamLogs struct {
	Client *logstream.Client
}

// Open implements LogFactory.
func (s StreamLogs) Open(run, stack uuid.UUID, step horizon.Step, masker *secrets.Masker) LogWriter {
	return &streamWriter{w: s.Client.NewWriter(run, stack, masker), step: step.ID, job: step.Job, execution: deref(step.ExecutionIndex)}
}

type streamWriter struct {
	w         *logstream.Writer
	step      uuid.UUID
	job       string
	execution int
}

// Line implements LogWriter. A line the writer refuses (it is closing) has nowhere else to go.
func (s *streamWriter) Line(fd, text string) {
	_ = s.w.Line(s.step, s.job, s.execution, logstream.FD(fd), text)
}

// Close implements LogWriter.
func (s *streamWriter) Close(ctx context.Context) error { return s.w.Close(ctx) }
