package app_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"horizon/functions/apitest"
	"horizon/shared/auth"
	"horizon/shared/store"
)

func TestOperationalEndpoints(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, nil)
	for _, path := range []string{"/healthz", "/readyz"} {
		if r := s.Do("GET", path, apitest.Req{Token: apitest.NoToken}); r.Status != 200 {
			t.Errorf("GET %s = %d, want 200", path, r.Status)
		}
	}
	s.Do("POST", "/v1/teams", apitest.Req{Body: map[string]any{"name": "metered"}})
	s.Do("GET", "/v1/me", apitest.Req{}) // so that a route has a duration sample
	m := s.Do("GET", "/metrics", apitest.Req{Token: apitest.NoToken})
	for _, want := range []string{`horizon_http_request_duration_seconds_count{method="GET",route="/v1/me",status="200"}`,
		// The method of an earlier request on the same connection survives the next one.
		`horizon_http_request_duration_seconds_count{method="POST",route="/v1/teams",status="201"}`} {
		if m.Status != 200 || !strings.Contains(string(m.Body), want) {
			t.Errorf("metrics lack %s: %d\n%s", want, m.Status, grepLines(string(m.Body), "request_duration_seconds_count"))
		}
	}
	o := s.Do("GET", "/openapi.yaml", apitest.Req{Token: apitest.NoToken})
	if o.Status != 200 || !strings.HasPrefix(string(o.Body), "openapi: 3.1") {
		t.Errorf("GET /openapi.yaml = %d %.40s", o.Status, o.Body)
	}
}

func TestRequestIDIsEchoedAndQuoted(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, nil)
	r := s.Do("GET", "/v1/me", apitest.Req{Headers: map[string]string{"X-Request-Id": "bot-42.a"}})
	if got := r.Header.Get("X-Request-Id"); got != "bot-42.a" {
		t.Errorf("X-Request-Id = %q, want the client's bot-42.a", got)
	}
	r = s.Do("GET", "/v1/teams/not-a-uuid", apitest.Req{Headers: map[string]string{"X-Request-Id": "bad id with spaces"}})
	id := r.Header.Get("X-Request-Id")
	if id == "" || id == "bad id with spaces" {
		t.Errorf("X-Request-Id = %q, want a generated one replacing the unsafe value", id)
	}
	if p := r.Problem(); p.RequestID != id || p.Instance != "/v1/teams/not-a-uuid" || p.Status != 400 {
		t.Errorf("problem = %+v, want status 400, request_id %q and the path as instance", p, id)
	}
}

func TestAuthentication(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, nil)
	_, revoked := s.NewUser(auth.RoleMember)
	a, err := store.TokenAuthenticate(context.Background(), s.DB, auth.HashToken(revoked))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.TokenRevoke(context.Background(), s.DB, a.Principal, a.Principal.TokenID); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		path    string
		headers map[string]string
	}{
		{"missing", "/v1/me", nil},
		{"not bearer", "/v1/me", map[string]string{"Authorization": "Basic " + s.Admin}},
		{"malformed", "/v1/me", map[string]string{"Authorization": "Bearer hzn_short"}},
		{"unknown", "/v1/me", map[string]string{"Authorization": "Bearer " + auth.NewToken().Reveal()}},
		{"revoked", "/v1/me", map[string]string{"Authorization": "Bearer " + revoked}},
		{"token in query", "/v1/me?access_token=" + s.Admin, map[string]string{"Authorization": "Bearer " + s.Admin}},
		{"unknown route still needs a token", "/v1/nothing-here", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := s.Do("GET", tc.path, apitest.Req{Token: apitest.NoToken, Headers: tc.headers})
			if p := r.Problem(); r.Status != 401 || p.Type != "urn:horizon:problem:unauthenticated" {
				t.Fatalf("got %d %+v, want 401 unauthenticated", r.Status, p)
			}
			if !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("WWW-Authenticate = %q", r.Header.Get("WWW-Authenticate"))
			}
		})
	}
	if r := s.Do("GET", "/v1/me", apitest.Req{}); r.Status != 200 {
		t.Fatalf("a valid token got %d", r.Status)
	}
}

func TestMalformedBodies(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, nil)
	before := s.State()
	tests := []struct {
		name       string
		body       string
		ctype      string
		wantStatus int
		wantField  string
	}{
		{"bad json", `{"name": "x",`, "", 400, ""},
		{"not json at all", `name=x`, "", 400, ""},
		{"two values", `{"name":"a"} {"name":"b"}`, "", 400, ""},
		{"empty", ``, "", 400, ""},
		{"wrong type", `{"name": 42}`, "", 422, "name"},
		{"unknown field", `{"name": "x", "id": "00000000-0000-0000-0000-000000000000"}`, "", 422, "id"},
		{"missing required", `{}`, "", 422, "name"},
		{"wrong media type", `{"name": "x"}`, "text/plain", 415, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := apitest.Req{Body: tc.body}
			if tc.ctype != "" {
				req.Headers = map[string]string{"Content-Type": tc.ctype}
			}
			r := s.Do("POST", "/v1/teams", req)
			p := r.Problem()
			if r.Status != tc.wantStatus {
				t.Fatalf("got %d %+v, want %d", r.Status, p, tc.wantStatus)
			}
			if tc.wantField != "" && (len(p.Errors) != 1 || p.Errors[0].Field != tc.wantField) {
				t.Fatalf("errors = %+v, want one naming %q", p.Errors, tc.wantField)
			}
		})
	}
	t.Run("too large", func(t *testing.T) {
		r := s.DoLarge("POST", "/v1/teams", []byte(`{"name": "`+strings.Repeat("x", 2<<20)+`"}`))
		if p := r.Problem(); r.Status != 413 || p.Type != "urn:horizon:problem:too-large" {
			t.Fatalf("got %d %+v, want 413 too-large", r.Status, p)
		}
	})
	if after := s.State(); after != before {
		t.Fatalf("rejected requests changed the database:\nbefore %s\nafter  %s", before, after)
	}
}

func TestUnknownRouteAndMethod(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, nil)
	if r := s.Do("GET", "/v1/nothing-here", apitest.Req{}); r.Status != 404 || r.Problem().Type != "urn:horizon:problem:not-found" {
		t.Errorf("unknown route: %d", r.Status)
	}
	if r := s.Do("PUT", "/v1/teams", apitest.Req{Body: `{}`}); r.Status != 405 || r.Problem().Type != "urn:horizon:problem:method-not-allowed" {
		t.Errorf("wrong method: %d", r.Status)
	}
}

func TestRateLimitPerToken(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, &apitest.Options{RateLimit: 3, RateWindow: time.Minute})
	_, other := s.NewUser(auth.RoleViewer)
	for i := 0; i < 3; i++ {
		if r := s.Do("GET", "/v1/me", apitest.Req{}); r.Status != 200 {
			t.Fatalf("request %d: %d", i, r.Status)
		}
	}
	r := s.Do("GET", "/v1/me", apitest.Req{})
	if r.Status != 429 || r.Problem().Type != "urn:horizon:problem:rate-limited" {
		t.Fatalf("4th request: %d, want 429", r.Status)
	}
	if ra := r.Header.Get("Retry-After"); ra == "" || ra == "0" {
		t.Errorf("Retry-After = %q, want the seconds left in the window", ra)
	}
	if r := s.Do("GET", "/v1/me", apitest.Req{Token: other}); r.Status != 200 {
		t.Errorf("another token shares the budget: %d", r.Status)
	}
}

// TestRateLimitIsSharedAcrossReplicas: two replicas together admit no more than the token's
// budget, though each reserves it in chunks.
func TestRateLimitIsSharedAcrossReplicas(t *testing.T) {
	t.Parallel()
	opts := &apitest.Options{RateLimit: 200, RateWindow: time.Minute}
	a := apitest.New(t, opts)
	b := a.Replica(opts)
	// Windows are fixed slots of the clock: 300 requests that straddle a slot's end would meet
	// two budgets. Start with at least 15 s of the slot left (the loop takes a few).
	if left := opts.RateWindow - time.Duration(time.Now().UnixMilli()%opts.RateWindow.Milliseconds())*time.Millisecond; left < 15*time.Second {
		time.Sleep(left + 100*time.Millisecond)
	}
	accepted := 0
	for i := 0; i < 300; i++ {
		s := a
		if i%2 == 1 {
			s = b
		}
		switch r := s.Do("GET", "/v1/me", apitest.Req{}); r.Status {
		case 200:
			accepted++
		case 429:
		default:
			t.Fatalf("status %d", r.Status)
		}
	}
	// Each replica may strand at most one unspent chunk (200/50 = 4 requests).
	if accepted > 200 || accepted < 200-2*4 {
		t.Fatalf("accepted %d of 300 across two replicas, want at most 200 and at least 192", accepted)
	}
}

func TestIdempotencyKey(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, nil)
	key := map[string]string{"Idempotency-Key": "create-blue-team"}
	first := s.Do("POST", "/v1/teams", apitest.Req{Body: map[string]any{"name": "blue"}, Headers: key})
	second := s.Do("POST", "/v1/teams", apitest.Req{Body: map[string]any{"name": "blue"}, Headers: key})
	if first.Status != 201 || second.Status != 201 {
		t.Fatalf("got %d then %d, want 201 twice", first.Status, second.Status)
	}
	if first.Map()["id"] != second.Map()["id"] || second.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("the retry was not a replay: %s vs %s", first.Body, second.Body)
	}
	before := s.State()
	other := s.Do("POST", "/v1/teams", apitest.Req{Body: map[string]any{"name": "red"}, Headers: key})
	if other.Status != 422 || other.Problem().Type != "urn:horizon:problem:idempotency-key-reused" {
		t.Fatalf("same key, other body: %d, want 422 idempotency-key-reused", other.Status)
	}
	if s.State() != before {
		t.Fatal("the refused request changed the database")
	}
	// Keys are scoped per token: another token may use the same key for its own request.
	_, otherAdminTok := s.NewUser(auth.RoleAdmin)
	if r := s.Do("POST", "/v1/teams", apitest.Req{Token: otherAdminTok, Body: map[string]any{"name": "green"}, Headers: key}); r.Status != 201 {
		t.Fatalf("another token's request with the same key: %d", r.Status)
	}
	var teams int
	if err := s.DB.QueryRow(context.Background(), `SELECT count(*) FROM teams`).Scan(&teams); err != nil || teams != 2 {
		t.Fatalf("teams = %d (%v), want 2", teams, err)
	}
	if r := s.Do("POST", "/v1/teams", apitest.Req{Body: map[string]any{"name": "x"}, Headers: map[string]string{"Idempotency-Key": strings.Repeat("k", 256)}}); r.Status != 400 {
		t.Fatalf("overlong key: %d, want 400", r.Status)
	}
}

func TestConcurrentRetriesWithOneKeyCreateOneObject(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, nil)
	const n = 20
	statuses := make(chan int, n)
	for i := 0; i < n; i++ {
		go func() {
			r := s.Do("POST", "/v1/teams", apitest.Req{Body: map[string]any{"name": "ops"}, Headers: map[string]string{"Idempotency-Key": "k1"}})
			statuses <- r.Status
		}()
	}
	for i := 0; i < n; i++ {
		if st := <-statuses; st != 201 && st != 409 {
			t.Errorf("status %d, want 201 (first or replay) or 409 (first still running)", st)
		}
	}
	var teams int
	if err := s.DB.QueryRow(context.Background(), `SELECT count(*) FROM teams`).Scan(&teams); err != nil || teams != 1 {
		t.Fatalf("teams = %d (%v), want exactly 1", teams, err)
	}
}

func TestCORS(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, &apitest.Options{CORSOrigins: []string{"https://ui.example.org"}})
	pre := s.Do("OPTIONS", "/v1/me", apitest.Req{Token: apitest.NoToken, Headers: map[string]string{
		"Origin": "https://ui.example.org", "Access-Control-Request-Method": "GET", "Access-Control-Request-Headers": "authorization"}})
	if pre.Status != http.StatusNoContent || pre.Header.Get("Access-Control-Allow-Origin") != "https://ui.example.org" {
		t.Fatalf("preflight: %d %v", pre.Status, pre.Header)
	}
	r := s.Do("GET", "/v1/me", apitest.Req{Headers: map[string]string{"Origin": "https://evil.example.com"}})
	if got := r.Header.Get("Access-Control-Allow-Origin"); got != "" {
		t.Fatalf("a foreign origin was allowed: %q", got)
	}
	r = s.Do("GET", "/v1/me", apitest.Req{Headers: map[string]string{"Origin": "https://ui.example.org"}})
	if r.Header.Get("Access-Control-Allow-Origin") != "https://ui.example.org" || !strings.Contains(r.Header.Get("Access-Control-Expose-Headers"), "ETag") {
		t.Fatalf("allowed origin: %v", r.Header)
	}
}

func grepLines(s, sub string) string {
	var b strings.Builder
	for l := range strings.Lines(s) {
		if strings.Contains(l, sub) {
			b.WriteString(l)
		}
	}
	return b.String()
}

// TestEveryAnswerIsNoSniff: whatever the API answers — a document, JSON, a problem from a
// handler, from authentication or from the router — browsers are told not to guess its type.
func TestEveryAnswerIsNoSniff(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, nil)
	for _, tc := range []struct {
		method, path, token string
		status              int
	}{
		{"GET", "/healthz", apitest.NoToken, 200},
		{"GET", "/openapi.yaml", apitest.NoToken, 200},
		{"GET", "/v1/me", "", 200},
		{"GET", "/v1/me", apitest.NoToken, 401},
		{"GET", "/v1/teams/not-a-uuid", "", 400},
		{"GET", "/v1/no-such-route", "", 404},
	} {
		r := s.Do(tc.method, tc.path, apitest.Req{Token: tc.token})
		if r.Status != tc.status {
			t.Errorf("%s %s = %d, want %d", tc.method, tc.path, r.Status, tc.status)
		}
		if got := r.Header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("%s %s (%d): X-Content-Type-Options %q, want nosniff", tc.method, tc.path, r.Status, got)
		}
	}
}
