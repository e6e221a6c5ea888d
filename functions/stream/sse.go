package stream

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
)

// Event is one Server-Sent Event.
type Event struct {
	// ID becomes the client's Last-Event-ID; "" sends none (the client keeps its last one).
	ID string
	// Name is the event type ("" is the default, "message").
	Name string
	// Data is the payload, normally one line of JSON. It must not be empty: clients drop
	// events without data.
	Data []byte
}

// Writer writes the events of one SSE stream. Its methods are safe to call from the stream's
// goroutine while the heartbeat runs alongside.
type Writer struct {
	mu  sync.Mutex
	w   *bufio.Writer
	err error
	buf []byte
}

// Send buffers ev; Flush sends it. Buffering several events and flushing once is what keeps a
// busy stream cheap. Send returns an error once the client is gone (IsClientGone).
func (w *Writer) Send(ev Event) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	b := w.buf[:0]
	if ev.ID != "" {
		b = append(append(append(b, "id: "...), ev.ID...), '\n')
	}
	if ev.Name != "" {
		b = append(append(append(b, "event: "...), ev.Name...), '\n')
	}
	for line := range bytes.Lines(ev.Data) {
		b = append(append(append(b, "data: "...), bytes.TrimRight(line, "\r\n")...), '\n')
	}
	b = append(b, '\n')
	w.buf = b
	_, w.err = w.w.Write(b)
	return w.err
}

// Flush sends what Send buffered.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = w.w.Flush()
	}
	return w.err
}

// raw writes a field or comment that is not an event and flushes it.
func (w *Writer) raw(s string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		if _, w.err = w.w.WriteString(s); w.err == nil {
			w.err = w.w.Flush()
		}
	}
	return w.err
}

// SSE answers 200 with an event stream and runs fn in the stream's goroutine until it returns,
// the client is gone, or the server closes (fn's ctx ends then). A heartbeat comment goes out
// every Config.Heartbeat; when it cannot be written, ctx ends, so fn, blocked waiting for
// something to send, notices a gone client too. fn returning nil ends the stream normally. An
// error after the client left or the server closed is nothing to report; any other error is
// logged and the connection closed (see Body), and the client reconnects with its
// Last-Event-ID.
//
// Call SSE last in the handler, after copying from c everything fn needs, and return its
// result.
func (s *Server) SSE(c *fiber.Ctx, kind string, fn func(ctx context.Context, w *Writer) error) error {
	c.Set(fiber.HeaderContentType, "text/event-stream")
	c.Set(fiber.HeaderCacheControl, "no-cache")
	c.Set("X-Accel-Buffering", "no") // nginx would otherwise buffer the stream
	heartbeat := s.cfg.Heartbeat
	return s.body(c, kind, sseBuffer, func(ctx context.Context, bw *bufio.Writer) error {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		w := &Writer{w: bw}
		// The first bytes make fasthttp send the headers, so the client knows the stream is
		// open before the first event.
		if err := w.raw("retry: " + strconv.Itoa(retryMillis) + "\n\n"); err != nil {
			return nil
		}
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(heartbeat)
			defer t.Stop()
			for {
				select {
				case <-t.C:
					if w.raw(": ping\n\n") != nil {
						cancel()
						return
					}
				case <-ctx.Done():
					return
				}
			}
		}()
		err := fn(ctx, w)
		cancel()
		wg.Wait()
		if err == nil || IsClientGone(err) || errors.Is(err, context.Canceled) {
			return nil
		}
		return err
	})
}
