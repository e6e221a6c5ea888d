package notify

import (
	"fmt"
	"time"

	"horizon/shared/horizon"
	"horizon/shared/secrets"
)

// Purposes of the sealed values of a subscription (secrets.Box).
const (
	PurposeURL    = "webhook-url"
	PurposeSecret = "webhook-secret"
)

// Unseal returns a subscription's URL and the secrets that sign its messages now (the current
// one, and the previous one during its grace period).
func Unseal(box *secrets.Box, w horizon.Webhook, now time.Time) (string, []string, error) {
	url, err := box.OpenString(PurposeURL, w.URLSealed)
	if err != nil {
		return "", nil, fmt.Errorf("open the destination: %w", err)
	}
	cur, err := box.OpenString(PurposeSecret, w.SecretSealed)
	if err != nil {
		return "", nil, fmt.Errorf("open the signing secret: %w", err)
	}
	sigs := []string{cur.Reveal()}
	if w.PreviousSecretSealed != nil && w.PreviousUntil != nil && now.Before(*w.PreviousUntil) {
		prev, err := box.OpenString(PurposeSecret, w.PreviousSecretSealed)
		if err != nil {
			return "", nil, fmt.Errorf("open the previous signing secret: %w", err)
		}
		sigs = append(sigs, prev.Reveal())
	}
	return url.Reveal(), sigs, nil
}
