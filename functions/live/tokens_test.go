package live_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"horizon/functions/apitest"
	"horizon/shared/auth"
	"horizon/shared/store"
	"horizon/shared/testkit"
)

func (w *world) mint(token string, body map[string]any) *apitest.Response {
	w.t.Helper()
	return w.s.Do("POST", "/v1/stream-tokens", apitest.Req{Token: token, Body: body})
}

func (w *world) tokenOf(r *apitest.Response) string {
	w.t.Helper()
	if r.Status != 200 {
		w.t.Fatalf("mint: %d %s", r.Status, r.Body)
	}
	return r.Map()["token"].(string)
}

// TestStreamTokensOpenOneStreamOfTheirUser mints stream tokens as a viewer and uses them as a
// browser's EventSource would (no Authorization header), and checks every way one is refused.
func TestStreamTokensOpenOneStreamOfTheirUser(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	stackA2 := w.s.NewStack(w.teamA, "a2")
	r := w.mint(w.viewerA, map[string]any{"purpose": "events"})
	// The expiry is the mint's clock plus the TTL, truncated to the second, so it is at most the
	// time after the answer plus the TTL (the time before the request may be a second too early).
	after := time.Now()
	ev := w.tokenOf(r)
	expires, err := time.Parse(time.RFC3339, r.Map()["expires_at"].(string))
	if err != nil || expires.After(after.Add(auth.MaxStreamTokenTTL)) || expires.Before(after.Add(auth.MaxStreamTokenTTL-time.Minute)) || !strings.HasPrefix(ev, auth.StreamTokenPrefix) || r.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("token %q expiring %v (%v), headers %v", ev, expires, err, r.Header)
	}
	logsA := w.tokenOf(w.mint(w.viewerA, map[string]any{"purpose": "logs", "stack_id": w.stackA}))

	// What the tokens open.
	st := w.s.Stream("/v1/events?stream_token="+ev, apitest.Req{Token: apitest.NoToken})
	w.followers(1)
	id := w.publish(w.stackEvent(w.stackA, w.teamA, "deploying"))
	w.publish(w.stackEvent(w.stackB, w.teamB, "deploying"))
	last := w.publish(w.stackEvent(w.stackA, w.teamA, "deployed"))
	if got := ids(st.Until(func(e apitest.Event) bool { return e.ID == last })); len(got) != 2 || got[0] != id {
		t.Fatalf("events through a viewer's stream token: %v, want only team a's", got)
	}
	run := w.s.NewRun(w.stackA)
	if r := w.s.Stream("/v1/stacks/"+w.stackA.String()+"/logs/stream?run="+run.String()+"&stream_token="+logsA, apitest.Req{Token: apitest.NoToken}); r.Status != 200 {
		t.Fatalf("the logs token on its stack: %d %s", r.Status, r.Body)
	}
	// The same token opens the stack's log download, which a browser saves through a link.
	if r := w.s.Do("GET", "/v1/stacks/"+w.stackA.String()+"/logs?stream_token="+logsA, apitest.Req{Token: apitest.NoToken}); r.Status != 200 {
		t.Fatalf("the logs token on its stack's download: %d %s", r.Status, r.Body)
	}

	// Minting what the caller may not have.
	for name, body := range map[string]map[string]any{
		"another team's stack":              {"purpose": "logs", "stack_id": w.stackB},
		"a missing stack":                   {"purpose": "logs", "stack_id": uuid.New()},
		"logs without a stack":              {"purpose": "logs"},
		"events with a stack":               {"purpose": "events", "stack_id": w.stackA},
		"an unknown purpose":                {"purpose": "admin"},
		"a field the request does not have": {"purpose": "events", "ttl": 3600},
	} {
		if r := w.mint(w.viewerA, body); r.Status != 422 {
			t.Errorf("mint %s: %d %s, want 422", name, r.Status, r.Body)
		}
	}

	// Using a token where it does not belong, or one that is not good any more.
	signer := w.s.Deps.StreamTokens
	viewer, err := store.TokenAuthenticate(context.Background(), w.s.DB, auth.HashToken(w.viewerA))
	if err != nil {
		t.Fatal(err)
	}
	expired := signer.Sign(auth.StreamClaims{Purpose: auth.StreamEvents, UserID: viewer.Principal.UserID, TokenID: viewer.Principal.TokenID, Expires: time.Now().Add(-time.Second)})
	tampered := ev[:len(ev)-4] + "AAAA"
	logsB := w.tokenOf(w.mint(w.memberB, map[string]any{"purpose": "logs", "stack_id": w.stackB}))
	tests := []struct {
		name, path string
		headers    map[string]string
		status     int
	}{
		{"expired", "/v1/events?stream_token=" + expired, nil, 401},
		{"tampered", "/v1/events?stream_token=" + tampered, nil, 401},
		{"an events token on a log", "/v1/stacks/" + w.stackA.String() + "/logs/stream?stream_token=" + ev, nil, 401},
		{"a logs token on the events", "/v1/events?stream_token=" + logsA, nil, 401},
		{"a logs token on another stack of the team", "/v1/stacks/" + stackA2.String() + "/logs/stream?stream_token=" + logsA, nil, 401},
		{"another team's logs token on its own stack's path", "/v1/stacks/" + w.stackA.String() + "/logs/stream?stream_token=" + logsB, nil, 401},
		{"a logs token on another stack's download", "/v1/stacks/" + stackA2.String() + "/logs?stream_token=" + logsA, nil, 401},
		{"an events token on a download", "/v1/stacks/" + w.stackA.String() + "/logs?stream_token=" + ev, nil, 401},
		{"the API token in the URL", "/v1/events?stream_token=" + w.viewerA, nil, 401},
		{"the API token as access_token", "/v1/events?access_token=" + w.viewerA, nil, 401},
		{"a stream token as the bearer token", "/v1/events", map[string]string{"Authorization": "Bearer " + ev}, 401},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := w.s.Stream(tc.path, apitest.Req{Token: apitest.NoToken, Headers: tc.headers})
			if r.Status != tc.status {
				t.Fatalf("got %d %s, want %d", r.Status, r.Body, tc.status)
			}
		})
	}
	if r := w.s.Do("GET", "/v1/me?stream_token="+ev, apitest.Req{Token: apitest.NoToken}); r.Status != 401 {
		t.Fatalf("a stream token on another route: %d, want 401", r.Status)
	}
	// A stream token acts as its API token: revoking that disables it.
	if _, err := store.TokenRevoke(context.Background(), w.s.DB, viewer.Principal, viewer.Principal.TokenID); err != nil {
		t.Fatal(err)
	}
	if r := w.s.Stream("/v1/events?stream_token="+ev, apitest.Req{Token: apitest.NoToken}); r.Status != 401 {
		t.Fatalf("the token of a revoked API token: %d %s, want 401", r.Status, r.Body)
	}
}

// TestRevokedTokenEndsItsStreams: revoking a token ends, on every replica, the event and log
// streams opened with it and with the stream tokens minted from it; they used to go on
// delivering for as long as they stayed open. Another user's stream is untouched.
func TestRevokedTokenEndsItsStreams(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	other := w.s.Replica(nil)
	browser := w.tokenOf(w.mint(w.viewerA, map[string]any{"purpose": "events"}))
	var tokenID string
	for _, tok := range w.s.Do("GET", "/v1/tokens", apitest.Req{Token: w.viewerA}).Map()["items"].([]any) {
		tokenID = tok.(map[string]any)["id"].(string)
	}
	streams := map[string]*apitest.Stream{
		"events, bearer, this replica":        w.s.Stream("/v1/events", apitest.Req{Token: w.viewerA}),
		"events, stream token, other replica": other.Stream("/v1/events?stream_token="+browser, apitest.Req{Token: apitest.NoToken}),
		"logs, bearer, other replica":         other.Stream("/v1/stacks/"+w.stackA.String()+"/logs/stream?follow=true", apitest.Req{Token: w.viewerA}),
	}
	bystander := w.s.Stream("/v1/events", apitest.Req{Token: w.memberB})
	testkit.Eventually(t, 10*time.Second, "the streams follow", func() bool {
		return w.s.Deps.EventHub.Stats().Members == 2 && other.Deps.EventHub.Stats().Members == 2
	})

	if r := w.s.Do("DELETE", "/v1/tokens/"+tokenID, apitest.Req{}); r.Status != 204 {
		t.Fatalf("revoke: %d %s", r.Status, r.Body)
	}
	for name, st := range streams {
		st.Rest() // fails the test if the stream goes on
		t.Logf("%s: ended", name)
	}
	if r := w.s.Do("GET", "/v1/me", apitest.Req{Token: w.viewerA}); r.Status != 401 {
		t.Fatalf("the revoked token still authenticates: %d", r.Status)
	}
	id := w.publish(w.stackEvent(w.stackB, w.teamB, "deployed"))
	if ev := bystander.Next(); ev.ID != id {
		t.Fatalf("the other user's stream got %+v, want the event %s", ev, id)
	}
}
