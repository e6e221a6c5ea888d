package apitest

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Event is one Server-Sent Event as a client sees it.
type Event struct {
	ID   string
	Name string
	Data string
}

// Stream is an event stream opened with a real HTTP client, read as a browser would: every
// event in order, comments skipped.
type Stream struct {
	// Status and Header are the response's. For a status other than 200 the body was read,
	// checked against openapi.yaml, and is in Body.
	Status int
	Header http.Header
	Body   []byte

	t      testing.TB
	ctx    context.Context
	cancel context.CancelFunc
	events chan Event
	done   chan struct{}
	err    error
}

// streamWait bounds how long Next waits for an event before failing the test.
const streamWait = 60 * time.Second

// Stream opens GET path as an event stream with r's token and headers; it closes at cleanup.
// The response is checked against openapi.yaml (for a 200, its status and headers).
func (s *Server) Stream(path string, r Req) *Stream {
	s.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+path, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	switch r.Token {
	case "":
		req.Header.Set("Authorization", "Bearer "+s.Admin)
	case NoToken:
	default:
		req.Header.Set("Authorization", "Bearer "+r.Token)
	}
	for k, v := range r.Headers {
		req.Header.Set(k, v)
	}
	res, err := (&http.Client{}).Do(req) // no timeout: the stream is long-lived
	if err != nil {
		cancel()
		s.t.Fatalf("GET %s: %v", path, err)
	}
	st := &Stream{Status: res.StatusCode, Header: res.Header, t: s.t, ctx: ctx, cancel: cancel, events: make(chan Event, 1024), done: make(chan struct{})}
	s.t.Cleanup(st.Close)
	if res.StatusCode != http.StatusOK {
		defer res.Body.Close()
		st.Body, _ = io.ReadAll(res.Body)
		close(st.done)
		close(st.events)
		s.checkContract(req, nil, &Response{Status: st.Status, Header: st.Header, Body: st.Body, t: s.t})
		return st
	}
	s.checkContract(req, nil, &Response{Status: st.Status, Header: st.Header, t: s.t})
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		s.t.Fatalf("GET %s: content type %q, want text/event-stream", path, ct)
	}
	go st.read(res.Body)
	return st
}

// read parses the stream into events until it ends.
func (st *Stream) read(body io.ReadCloser) {
	defer close(st.done)
	defer close(st.events)
	defer body.Close()
	err := ReadEvents(body, func(ev Event) bool {
		select {
		case st.events <- ev:
			return true
		case <-st.ctx.Done():
			return false
		}
	})
	if err != nil && !errorsIsCanceled(err) {
		st.err = err
	}
}

// ReadEvents parses Server-Sent Events from r, as a browser does (comments skipped, events
// without data dropped), and passes each to fn until fn returns false or r ends. It returns
// nil at the end of r.
func ReadEvents(r io.Reader, fn func(Event) bool) error {
	br := bufio.NewReader(r)
	var ev Event
	var data []string
	for {
		line, err := br.ReadString('\n')
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			if data != nil {
				ev.Data = strings.Join(data, "\n")
				if !fn(ev) {
					return nil
				}
			}
			ev, data = Event{}, nil
		case strings.HasPrefix(line, ":"):
		default:
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "id":
				ev.ID = value
			case "event":
				ev.Name = value
			case "data":
				data = append(data, value)
			}
		}
	}
}

func errorsIsCanceled(err error) bool {
	return errors.Is(err, context.Canceled) || strings.Contains(err.Error(), "use of closed")
}

// Next returns the next event; it fails the test if the stream ends or nothing comes for a
// minute.
func (st *Stream) Next() Event {
	st.t.Helper()
	select {
	case ev, ok := <-st.events:
		if !ok {
			st.t.Fatalf("the stream ended (%v) while an event was expected", st.err)
		}
		return ev
	case <-time.After(streamWait):
		st.t.Fatalf("no event for %s", streamWait)
	}
	return Event{}
}

// Until returns the events up to and including the first one for which stop is true.
func (st *Stream) Until(stop func(Event) bool) []Event {
	st.t.Helper()
	var out []Event
	for {
		ev := st.Next()
		out = append(out, ev)
		if stop(ev) {
			return out
		}
	}
}

// Rest returns every event until the server ends the stream.
func (st *Stream) Rest() []Event {
	st.t.Helper()
	var out []Event
	for {
		select {
		case ev, ok := <-st.events:
			if !ok {
				if st.err != nil {
					st.t.Fatalf("reading the stream: %v", st.err)
				}
				return out
			}
			out = append(out, ev)
		case <-time.After(streamWait):
			st.t.Fatalf("the stream did not end within %s (%d events)", streamWait, len(out))
		}
	}
}

// Close disconnects. It may be called more than once.
func (st *Stream) Close() {
	st.cancel()
	<-st.done
}
