package notify

import (
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// TestSignMatchesTheSpecificationsVector: the Standard Webhooks test vector (the reference
// libraries' TestWebhookSign), and a second secret adding a second signature.
func TestSignMatchesTheSpecificationsVector(t *testing.T) {
	t.Parallel()
	h := http.Header{}
	err := SignHeaders(h, "msg_p5jXN8AQM9LWM0D4loKWxJek", time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`),
		"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := h.Get("webhook-signature"), "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if h.Get("webhook-timestamp") != "1614265330" || h.Get("webhook-id") != "msg_p5jXN8AQM9LWM0D4loKWxJek" {
		t.Errorf("headers %v", h)
	}
	if err := SignHeaders(h, "msg_1", time.Now(), []byte("{}"), NewSecret(), NewSecret()); err != nil {
		t.Fatal(err)
	}
	if sigs := strings.Fields(h.Get("webhook-signature")); len(sigs) != 2 {
		t.Errorf("two secrets give %v", sigs)
	}
}

func TestNextDelay(t *testing.T) {
	t.Parallel()
	now := time.Now()
	if d, ok := NextDelay(2, nil, now); !ok || d < 4500*time.Millisecond || d > 5500*time.Millisecond {
		t.Errorf("first retry after %s, want 5 s ± 10 %%", d)
	}
	if d, _ := NextDelay(2, http.Header{"Retry-After": {"120"}}, now); d != 2*time.Minute {
		t.Errorf("Retry-After 120 gives %s", d)
	}
	if _, ok := NextDelay(MaxAttempts()+1, nil, now); ok {
		t.Errorf("an attempt after the last")
	}
}

func TestGuardAllowed(t *testing.T) {
	t.Parallel()
	g := Guard{Allow: []netip.Prefix{netip.MustParsePrefix("10.9.0.0/16")}}
	for addr, want := range map[string]bool{"93.184.216.34": true, "127.0.0.1": false, "10.0.0.1": false, "10.9.1.1": true,
		"169.254.169.254": false, "::1": false, "fd00:ec2::254": false, "::ffff:127.0.0.1": false, "2001:db8::1": true, "100.64.0.1": false} {
		if got := g.Allowed(netip.MustParseAddr(addr)); got != want {
			t.Errorf("Allowed(%s) = %v, want %v", addr, got, want)
		}
	}
}
