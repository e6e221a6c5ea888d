package secrets

import (
	"bytes"
	"errors"
	"io"
	"sync"
)

// MaxLineLength bounds what a Writer buffers while waiting for the end of a line. A longer line
// is masked and passed on in pieces of this size, each followed by a newline; a secret that
// straddles a cut is then not recognised. Terraform and scripts do not print lines that long
// except by accident (a binary dumped to stdout); the bound keeps such output from exhausting
// the worker's memory.
const MaxLineLength = 1 << 20

// ErrWriterClosed is returned by Writer.Write after Close.
var ErrWriterClosed = errors.New("masking writer is closed")

// Writer masks text line by line before passing it on: every complete line written to it goes
// to the underlying writer masked, as one Write call ending in "\n". A partial line is held back
// until its newline arrives (so a secret split across two writes is still found) or until Close.
//
// A Writer is safe for concurrent use, but lines from concurrent writers interleave correctly
// only if each Write holds whole lines; give each stream (stdout, stderr) its own Writer.
type Writer struct {
	m *Masker
	w io.Writer

	mu     sync.Mutex
	buf    []byte // the partial line held back
	out    []byte // reused for the masked line
	err    error  // the first error of w, returned by every later call
	closed bool
}

// NewWriter returns a Writer that masks with m and writes to w.
func NewWriter(w io.Writer, m *Masker) *Writer { return &Writer{m: m, w: w} }

// Write masks and passes on every line that p completes. It reports len(p) unless the
// underlying writer fails, whose error it returns then and on every later call.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return 0, ErrWriterClosed
	}
	if w.err != nil {
		return 0, w.err
	}
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			w.buf = append(w.buf, p...)
			for len(w.buf) >= MaxLineLength {
				rest := w.buf[MaxLineLength:]
				if err := w.emit(w.buf[:MaxLineLength], true); err != nil {
					return 0, err
				}
				w.buf = append(w.buf[:0], rest...)
			}
			break
		}
		line := p[:i]
		if len(w.buf) > 0 {
			w.buf = append(w.buf, line...)
			line = w.buf
		}
		if err := w.emit(line, true); err != nil {
			return 0, err
		}
		w.buf = w.buf[:0]
		p = p[i+1:]
	}
	return n, nil
}

// Close masks and passes on the partial line held back, if any, without adding a newline. It
// does not close the underlying writer. Later calls to Write fail with ErrWriterClosed.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return w.err
	}
	w.closed = true
	if w.err != nil || len(w.buf) == 0 {
		return w.err
	}
	err := w.emit(w.buf, false)
	w.buf = nil
	return err
}

func (w *Writer) emit(line []byte, newline bool) error {
	masked := w.m.Mask(string(line))
	w.out = append(w.out[:0], masked...)
	if newline {
		w.out = append(w.out, '\n')
	}
	if _, err := w.w.Write(w.out); err != nil {
		w.err = err
		return err
	}
	return nil
}
