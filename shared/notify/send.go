package notify

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"time"
	"unicode/utf8"
)

// Config is how messages are sent.
type Config struct {
	Guard Guard
	// Timeout bounds one attempt: connection, TLS, request and answer (HORIZON_WEBHOOK_TIMEOUT).
	Timeout time.Duration
	// ConsoleURL is the console's base URL, for the links in messages (HORIZON_CONSOLE_URL);
	// empty leaves links out.
	ConsoleURL string
}

// Sender sends one attempt of a message. It is safe for concurrent use.
type Sender struct {
	cfg    Config
	client *http.Client
}

// NewSender returns a sender on cfg (Timeout defaults to 15 s, within the 15–30 s the
// Standard Webhooks specification recommends receivers to answer in).
func NewSender(cfg Config) *Sender {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 15 * time.Second
	}
	return &Sender{cfg: cfg, client: cfg.Guard.Client(cfg.Timeout)}
}

// Timeout is the bound of one attempt.
func (s *Sender) Timeout() time.Duration { return s.cfg.Timeout }

// ResponseLimit is how much of an answer the delivery log keeps.
const ResponseLimit = 1024

// Result is what one attempt got: a status (0 when there was no answer), the first ResponseLimit
// bytes of the answer, its headers, the time it took, and the error when it failed.
type Result struct {
	Status   int
	Header   http.Header
	Response string
	Latency  time.Duration
	Err      error
}

// OK reports whether the destination accepted the message (2xx).
func (r Result) OK() bool { return r.Err == nil && r.Status >= 200 && r.Status < 300 }

// Send posts e to url as kind, signed with secrets (standard kind only; the first is current).
func (s *Sender) Send(ctx context.Context, kind Kind, url string, e Event, secrets []string) Result {
	body, err := Body(kind, e, s.cfg.ConsoleURL)
	if err != nil {
		return Result{Err: err}
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return Result{Err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Horizon-Webhooks/1")
	if kind == KindStandard {
		if err := SignHeaders(req.Header, "msg_"+e.ID, time.Now(), body, secrets...); err != nil {
			return Result{Err: err}
		}
	}
	start := time.Now()
	res, err := s.client.Do(req)
	if err != nil {
		return Result{Latency: time.Since(start), Err: err}
	}
	defer res.Body.Close() // a read-only body: closing cannot lose anything
	head, _ := io.ReadAll(io.LimitReader(res.Body, ResponseLimit))
	for len(head) > 0 && !utf8.Valid(head) {
		head = head[:len(head)-1] // a cut in the middle of a character
	}
	return Result{Status: res.StatusCode, Header: res.Header, Response: string(head), Latency: time.Since(start)}
}

// CheckDestination checks a destination URL when a subscription is saved: its form (CheckURL)
// and every address its host resolves to (Guard.Check). The error says what is wrong, for the
// url field.
func (s *Sender) CheckDestination(ctx context.Context, raw string) error {
	u, err := CheckURL(raw)
	if err != nil {
		return err
	}
	return s.cfg.Guard.Check(ctx, u)
}
