package web_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"horizon/shared/notify"
)

// receiver is the webhook destination of the console's journey: a real HTTP server on loopback
// that records every message and answers POST /hook with 200 and POST /refuse with 503 (a
// destination that cannot be enabled). GET /received lists what came, so that the journey can
// verify the signatures with the secret the console showed it once.
type receiver struct {
	URL  string
	mu   sync.Mutex
	msgs []receivedMessage
}

type receivedMessage struct {
	Path      string `json:"path"`
	ID        string `json:"webhook_id"`
	Timestamp string `json:"webhook_timestamp"`
	Signature string `json:"webhook_signature"`
	Body      string `json:"body"`
}

// receiverAnswer is what /hook answers, so the journey can find it in the delivery log.
const receiverAnswer = "received by the console's test receiver"

func newReceiver(t testing.TB) *receiver {
	r := &receiver{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, q *http.Request) {
		if q.Method == http.MethodGet && q.URL.Path == "/received" {
			r.mu.Lock()
			defer r.mu.Unlock()
			_ = json.NewEncoder(w).Encode(r.msgs) // the journey reads it; a failed write fails its check
			return
		}
		body, _ := io.ReadAll(io.LimitReader(q.Body, 1<<20)) // a short body fails the signature check
		r.mu.Lock()
		r.msgs = append(r.msgs, receivedMessage{Path: q.URL.Path, ID: q.Header.Get("webhook-id"), Timestamp: q.Header.Get("webhook-timestamp"),
			Signature: q.Header.Get("webhook-signature"), Body: string(body)})
		r.mu.Unlock()
		if strings.HasPrefix(q.URL.Path, "/refuse") {
			http.Error(w, "not today", http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, receiverAnswer) // Horizon logs what it got, even nothing
	}))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

// received is how many messages came to path.
func (r *receiver) received(path string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, m := range r.msgs {
		if m.Path == path {
			n++
		}
	}
	return n
}

// loopbackWebhooks is what an operator sets with HORIZON_WEBHOOK_ALLOW_CIDRS=127.0.0.0/8 to
// let Horizon reach a destination on the same machine: the receiver above.
var loopbackWebhooks = notify.Guard{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
