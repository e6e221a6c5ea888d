package notify

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// SecretPrefix starts every signing secret, as the Standard Webhooks specification asks.
const SecretPrefix = "whsec_"

// NewSecret returns a new signing secret: whsec_ and the base64 of 32 random bytes (the
// specification asks for 24 to 64).
func NewSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go ≥ 1.24)
	return SecretPrefix + base64.StdEncoding.EncodeToString(b)
}

// SignHeaders sets the Standard Webhooks headers of a message with id, sent at ts, signed by
// every secret given (the current one, then a previous one still in its grace period):
// webhook-signature then carries one "v1,<base64>" per secret, separated by spaces, and a
// receiver that knows either accepts it.
func SignHeaders(h http.Header, id string, ts time.Time, body []byte, secrets ...string) error {
	var sigs []string
	for _, s := range secrets {
		wh, err := standardwebhooks.NewWebhook(s)
		if err != nil {
			return fmt.Errorf("signing secret: %w", err)
		}
		sig, err := wh.Sign(id, ts, body)
		if err != nil {
			return fmt.Errorf("sign: %w", err)
		}
		sigs = append(sigs, sig)
	}
	h.Set(standardwebhooks.HeaderWebhookID, id)
	h.Set(standardwebhooks.HeaderWebhookTimestamp, fmt.Sprint(ts.Unix()))
	h.Set(standardwebhooks.HeaderWebhookSignature, strings.Join(sigs, " "))
	return nil
}
