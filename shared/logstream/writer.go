package logstream

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"horizon/shared/rstream"
	"horizon/shared/secrets"
)

var (
	// ErrClosed is returned by Line once Close has begun; the line was not accepted.
	ErrClosed = errors.New("log writer closed")
	// ErrNotStreamed is wrapped by Close's error when some lines could not be added to the
	// Redis stream: they are in Postgres (with fallback ids) but live followers missed them.
	ErrNotStreamed = errors.New("log lines not streamed live")
	// ErrNotDurable is wrapped by Close's error when some accepted lines could not be stored in
	// Postgres before Close's context ended: they are lost from the durable copy.
	ErrNotDurable = errors.New("log lines not stored")
)

// Writer writes the log lines of one run (usually of one of its steps) to the run's Redis
// stream and, batched, to log_lines. Make one with Client.NewWriter, call Line from any number
// of goroutines, and Close it before the run's log is ended with Client.End.
type Writer struct {
	c      *Client
	run    uuid.UUID
	stack  uuid.UUID
	masker *secrets.Masker
	key    string

	mu       sync.Mutex
	space    *sync.Cond // broadcast when bytes shrink or the writer closes
	pending  []Line     // accepted, waiting for an id
	copying  []Line     // with an id, waiting for Postgres
	bytes    int        // held: pending, copying and in flight
	closing  bool
	stats    Stats
	redisErr error // the first XADD failure
	pgErr    error // the last COPY failure

	// Owned by the flush goroutine.
	last       rstream.ID // the last id given to a line of this writer
	tag        uint64     // this writer's part of its fallback ids
	fallbacks  uint64     // fallback ids given so far
	unnoticed  int        // lines given fallback ids since the last notice
	retryAt    time.Time  // no XADD before this, after a failure
	expiresSet bool

	flushKick   chan struct{} // pending has new lines
	copyKick    chan struct{} // copying has new lines
	closed      chan struct{} // Close began: flush everything now
	abandon     chan struct{} // Close's ctx ended: stop waiting for Redis and Postgres
	flushed     chan struct{} // the flush goroutine has exited
	copied      chan struct{} // the copy goroutine has exited
	closeOnce   sync.Once
	abandonOnce sync.Once
}

// Stats counts what a Writer did.
type Stats struct {
	Accepted int64 // lines accepted: a long text counts once per piece, notices count too
	Streamed int64 // lines added to the Redis stream
	Fallback int64 // lines given a fallback id because Redis failed
	Stored   int64 // lines stored in log_lines
	Lost     int64 // accepted lines Close gave up storing
	Buffered int   // bytes held now
	Blocked  int   // Line calls waiting for buffer space now
}

// NewWriter returns a Writer for run of stack whose lines are masked with m, which must not
// be nil (a zero Masker masks nothing) and may gain secrets while the writer runs. The writer
// runs two goroutines until Close.
func (c *Client) NewWriter(run, stack uuid.UUID, m *secrets.Masker) *Writer {
	if m == nil {
		panic("logstream: NewWriter with a nil Masker")
	}
	w := &Writer{
		c: c, run: run, stack: stack, masker: m, key: c.Key(run),
		tag:       rand.Uint64N(1 << 29),
		flushKick: make(chan struct{}, 1),
		copyKick:  make(chan struct{}, 1),
		closed:    make(chan struct{}),
		abandon:   make(chan struct{}),
		flushed:   make(chan struct{}),
		copied:    make(chan struct{}),
	}
	w.space = sync.NewCond(&w.mu)
	go w.flushLoop()
	go w.copyLoop()
	return w
}

// Line masks text with the writer's Masker, in the caller's goroutine, and queues it as one
// line (several, if longer than MaxLineBytes) of step, job and execution; step is uuid.Nil for
// a run-level line and job "" for a line of no job, whose execution is ignored. A final "\n"
// or "\r\n" is dropped.
//
// Line blocks while the writer holds Config.BufferBytes of lines not yet stored in Postgres:
// a burst slows the program producing it instead of growing memory. It returns ErrClosed once
// Close has begun, and an error for an unknown fd; a line for which Line returned nil is
// accepted, and will be in log_lines unless Close reports ErrNotDurable.
func (w *Writer) Line(step uuid.UUID, job string, execution int, fd FD, text string) error {
	if !fd.valid() {
		return fmt.Errorf("log line fd %q: want stdout, stderr or horizon", fd)
	}
	if job == "" {
		execution = 0
	}
	text = w.masker.Mask(strings.TrimSuffix(strings.TrimSuffix(text, "\n"), "\r"))
	at := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	for first := true; first || text != ""; first = false {
		var piece string
		piece, text = cut(text, MaxLineBytes)
		l := Line{Run: w.run, Step: step, Job: job, Execution: execution, FD: fd, At: at, Text: piece}
		size := lineSize(&l)
		// A writer holding nothing takes any line, so that one larger than the buffer
		// cannot block forever.
		for w.bytes > 0 && w.bytes+size > w.c.cfg.BufferBytes && !w.closing {
			w.stats.Blocked++
			w.space.Wait()
			w.stats.Blocked--
		}
		if w.closing {
			return ErrClosed
		}
		w.pending = append(w.pending, l)
		w.bytes += size
		w.stats.Accepted++
		if n := len(w.pending); n == 1 || n == w.c.cfg.FlushLines {
			kick(w.flushKick)
		}
	}
	return nil
}

// cut splits s after at most n bytes, at a UTF-8 boundary.
func cut(s string, n int) (string, string) {
	if len(s) <= n {
		return s, ""
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	if i == 0 {
		i = n // not UTF-8: cut anywhere
	}
	return s[:i], s[i:]
}

// Stats returns the writer's counters.
func (w *Writer) Stats() Stats {
	w.mu.Lock()
	defer w.mu.Unlock()
	st := w.stats
	st.Buffered = w.bytes
	return st
}

// Close stops accepting lines (blocked Line calls return ErrClosed), sends everything accepted
// to Redis and Postgres without waiting for the batch intervals, and waits for it. If ctx ends
// first it stops retrying: lines not yet stored are counted as lost, and Close returns after
// the Redis or Postgres call in flight, if any, times out. The error wraps ErrNotStreamed
// and/or ErrNotDurable with counts and the first underlying error; nil means every accepted
// line is in both. Calling Close again returns the same result.
func (w *Writer) Close(ctx context.Context) error {
	w.closeOnce.Do(func() {
		w.mu.Lock()
		w.closing = true
		w.space.Broadcast()
		w.mu.Unlock()
		close(w.closed)
	})
	select {
	case <-w.copied:
	case <-ctx.Done():
		w.abandonOnce.Do(func() { close(w.abandon) })
		<-w.copied
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var errs []error
	if w.stats.Fallback > 0 {
		errs = append(errs, fmt.Errorf("%w: %d of %d: %w", ErrNotStreamed, w.stats.Fallback, w.stats.Accepted, w.redisErr))
	}
	if w.stats.Lost > 0 {
		errs = append(errs, fmt.Errorf("%w: %d of %d: %w", ErrNotDurable, w.stats.Lost, w.stats.Accepted, w.pgErr))
	}
	return errors.Join(errs...)
}

func kick(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default: // a kick is pending already
	}
}

// linger waits up to d after the first line of a batch, or until kicked again (the batch is
// full) or closed.
func linger(d time.Duration, kicked, closed <-chan struct{}) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-kicked:
	case <-closed:
	}
}
