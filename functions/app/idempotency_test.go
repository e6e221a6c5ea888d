package app_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"net/netip"
	"testing"

	"horizon/functions/apitest"
	"horizon/shared/notify"
)

// TestIdempotentResponsesAreSealedAtRest sends the requests whose answer carries a secret once
// (a minted token, a webhook's signing secret at creation and at rotation) with an
// Idempotency-Key, then reads idempotency_keys directly: neither the secret nor its base64 is
// there, and the retry still gets the same secret.
func TestIdempotentResponsesAreSealedAtRest(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, &apitest.Options{Webhooks: notify.Guard{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}})
	team := s.NewTeam("bots")
	hook := map[string]any{"team_id": team, "name": "bot", "url": "http://127.0.0.1:9/hook", "events": []string{"run.finished"}}
	created := s.Do("POST", "/v1/webhooks", apitest.Req{Body: hook})
	if created.Status != 201 {
		t.Fatalf("create a webhook: %d %s", created.Status, created.Body)
	}
	hookID := created.Map()["id"].(string)

	for _, tc := range []struct {
		name, path, field string
		body              any
	}{
		{"token", "/v1/tokens", "token", map[string]any{"name": "chat-ops", "scope": "deploy"}},
		{"webhook", "/v1/webhooks", "secret", map[string]any{"team_id": team, "name": "bot2", "url": "http://127.0.0.1:9/h", "events": []string{"run.finished"}}},
		{"rotation", "/v1/webhooks/" + hookID + "/rotate-secret", "secret", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := map[string]string{"Idempotency-Key": "mint-" + tc.name}
			first := s.For(t).Do("POST", tc.path, apitest.Req{Body: tc.body, Headers: key})
			if first.Status/100 != 2 {
				t.Fatalf("first request: %d %s", first.Status, first.Body)
			}
			secret, _ := first.Map()[tc.field].(string)
			if secret == "" {
				t.Fatalf("the answer carries no %s: %s", tc.field, first.Body)
			}
			var stored []byte
			if err := s.DB.QueryRow(context.Background(), `SELECT body FROM idempotency_keys WHERE key = $1 AND state = 'done'`,
				key["Idempotency-Key"]).Scan(&stored); err != nil {
				t.Fatalf("read the stored response: %v", err)
			}
			for _, enc := range [][]byte{[]byte(secret), []byte(base64.StdEncoding.EncodeToString([]byte(secret))),
				[]byte(base64.RawURLEncoding.EncodeToString([]byte(secret))), first.Body} {
				if bytes.Contains(stored, enc) {
					t.Fatalf("idempotency_keys holds %q in clear", enc)
				}
			}
			again := s.For(t).Do("POST", tc.path, apitest.Req{Body: tc.body, Headers: key})
			if again.Header.Get("Idempotent-Replayed") != "true" || again.Status != first.Status || again.Map()[tc.field] != secret {
				t.Fatalf("the retry was not the same answer: %d %s, want %d with the same %s", again.Status, again.Body, first.Status, tc.field)
			}
		})
	}
}

// TestIdempotentResponseThatDoesNotOpenRunsAgain: a stored body that does not open (a row
// written in clear before bodies were sealed) is treated as an expired key — the request runs
// again and is stored sealed — rather than replayed or refused.
func TestIdempotentResponseThatDoesNotOpenRunsAgain(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, nil)
	key := map[string]string{"Idempotency-Key": "legacy"}
	body := map[string]any{"name": "ops"}
	first := s.Do("POST", "/v1/teams", apitest.Req{Body: body, Headers: key})
	if first.Status != 201 {
		t.Fatalf("create: %d %s", first.Status, first.Body)
	}
	// Make it the row an older version wrote: the answer in clear, for a team since deleted.
	if _, err := s.DB.Exec(context.Background(), `UPDATE idempotency_keys SET body = $1 WHERE key = 'legacy'`,
		[]byte(`{"id":"00000000-0000-0000-0000-000000000001","name":"ops"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB.Exec(context.Background(), `DELETE FROM teams`); err != nil {
		t.Fatal(err)
	}
	again := s.Do("POST", "/v1/teams", apitest.Req{Body: body, Headers: key})
	if again.Status != 201 || again.Header.Get("Idempotent-Replayed") != "" || again.Map()["id"] == first.Map()["id"] {
		t.Fatalf("got %d replayed=%q %s, want a new team created afresh", again.Status, again.Header.Get("Idempotent-Replayed"), again.Body)
	}
	third := s.Do("POST", "/v1/teams", apitest.Req{Body: body, Headers: key})
	if third.Header.Get("Idempotent-Replayed") != "true" || third.Map()["id"] != again.Map()["id"] {
		t.Fatalf("the next retry replays the new answer: got %s", third.Body)
	}
}

// TestIdempotencyKeyWithTheDatabaseLostIsA503: a request whose claim of its Idempotency-Key
// loses Postgres (a restart: the soak saw "the database system is starting up") is a 503 the
// client retries, never a 500; the retry then runs the request once.
func TestIdempotencyKeyWithTheDatabaseLostIsA503(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, nil)
	key := map[string]string{"Idempotency-Key": "lost-db"}
	body := map[string]any{"name": "blue"}
	r := s.LoseConnectionAt("idempotency_keys", func() *apitest.Response {
		return s.Do("POST", "/v1/teams", apitest.Req{Body: body, Headers: key})
	})
	if r.Status != 503 || r.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("claiming the key with the database lost: %d %s, want 503 problem+json", r.Status, r.Body)
	}
	if again := s.Do("POST", "/v1/teams", apitest.Req{Body: body, Headers: key}); again.Status != 201 {
		t.Fatalf("the client's retry: %d %s, want 201", again.Status, again.Body)
	}
	var teams int
	if err := s.DB.QueryRow(context.Background(), `SELECT count(*) FROM teams WHERE name = 'blue'`).Scan(&teams); err != nil || teams != 1 {
		t.Fatalf("%d teams named blue (%v), want 1", teams, err)
	}
}
