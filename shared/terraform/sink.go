package terraform

import (
	"bytes"
	"sync"
)

// lineWriter turns terraform-exec's writes into Sink calls, one per line. terraform-exec
// already writes whole lines (it reads its pipes with ReadBytes('\n')), but a partial line is
// held until its end or flush all the same. The mutex is shared by a work dir's stdout and
// stderr writers, which terraform-exec drives from two goroutines, so Sink calls never overlap.
type lineWriter struct {
	mu     *sync.Mutex
	sink   Sink
	stream Stream
	buf    []byte
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	for {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			w.buf = append(w.buf, p...)
			return n, nil
		}
		line := p[:i]
		if len(w.buf) > 0 {
			line = append(w.buf, line...)
		}
		w.sink(w.stream, string(bytes.TrimSuffix(line, []byte("\r"))))
		w.buf = w.buf[:0]
		p = p[i+1:]
	}
}

// flush passes on a partial line left at the end of a command.
func (w *lineWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.sink(w.stream, string(w.buf))
		w.buf = w.buf[:0]
	}
}

// note writes a line of Horizon's own to the sink.
func (w *Workdir) note(line string) {
	w.stdout.mu.Lock()
	defer w.stdout.mu.Unlock()
	w.sink(Horizon, line)
}
