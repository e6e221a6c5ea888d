package logstream

import (
	"context"
	"time"

	"horizon/shared/store"
)

const (
	copyTimeout    = 30 * time.Second
	copyMinBackoff = 100 * time.Millisecond
	copyMaxBackoff = 5 * time.Second
)

// copyLoop stores lines that have their ids in log_lines, CopyLines at a time, at most
// CopyInterval after the first of a batch arrived. A failed COPY is retried with backoff, for
// as long as it takes (lines accepted must not be lost; Line blocks meanwhile once the buffer
// is full) or until Close's ctx ends. It exits once the flush goroutine has and nothing is left.
func (w *Writer) copyLoop() {
	defer close(w.copied)
	for {
		select {
		case <-w.copyKick:
			linger(w.c.cfg.CopyInterval, w.copyKick, w.flushed)
		case <-w.flushed:
		}
		for {
			w.mu.Lock()
			n := min(len(w.copying), w.c.cfg.CopyLines)
			batch := w.copying[:n:n]
			w.copying = w.copying[n:]
			if len(w.copying) == 0 {
				w.copying = nil
			}
			w.mu.Unlock()
			if n == 0 {
				break
			}
			stored := w.store(batch)
			size := 0
			for i := range batch {
				size += lineSize(&batch[i])
			}
			w.mu.Lock()
			w.bytes -= size
			if stored {
				w.stats.Stored += int64(n)
			} else {
				w.stats.Lost += int64(n)
			}
			w.space.Broadcast()
			w.mu.Unlock()
		}
		select {
		case <-w.flushed:
			w.mu.Lock()
			done := len(w.copying) == 0
			w.mu.Unlock()
			if done {
				return
			}
		default:
		}
	}
}

// store copies batch into log_lines, retrying until it succeeds or the writer is abandoned.
func (w *Writer) store(batch []Line) bool {
	rows := make([]store.LogLine, len(batch))
	for i := range batch {
		rows[i] = toRow(&batch[i], w.stack)
	}
	backoff := copyMinBackoff
	for {
		if w.abandoned() {
			return false
		}
		ctx, cancel := context.WithTimeout(context.Background(), copyTimeout)
		go func() { // an abandoning Close does not wait for a hung COPY
			select {
			case <-w.abandon:
				cancel()
			case <-ctx.Done():
			}
		}()
		err := store.LogLinesCopy(ctx, w.c.db, rows)
		cancel()
		if err == nil {
			return true
		}
		w.mu.Lock()
		w.pgErr = err
		w.mu.Unlock()
		select {
		case <-time.After(backoff):
		case <-w.abandon:
			return false
		}
		backoff = min(2*backoff, copyMaxBackoff)
	}
}
