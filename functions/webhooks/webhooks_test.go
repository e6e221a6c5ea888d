package webhooks_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"horizon/functions/apitest"
	"horizon/shared/auth"
	"horizon/shared/notify"
)

// loopback allows the test's receivers, which listen on 127.0.0.1.
var loopback = notify.Guard{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}

// receiver is an HTTP destination on loopback answering status (settable), counting requests
// and checking every signature with the reference verifier of secret (settable).
type receiver struct {
	*httptest.Server
	status   atomic.Int64
	hits     atomic.Int64
	badSigs  atomic.Int64
	verifier atomic.Pointer[standardwebhooks.Webhook]
}

func newReceiver(t *testing.T, status int) *receiver {
	t.Helper()
	r := &receiver{}
	r.status.Store(int64(status))
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body := make([]byte, 1<<16)
		n, _ := req.Body.Read(body)
		r.hits.Add(1)
		if v := r.verifier.Load(); v != nil {
			if err := v.Verify(body[:n], req.Header); err != nil {
				r.badSigs.Add(1)
			}
		}
		w.WriteHeader(int(r.status.Load()))
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(r.Close)
	return r
}

func TestWebhooksTeamScopingAndRoles(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, &apitest.Options{Webhooks: loopback})
	red, blue := s.NewTeam("red"), s.NewTeam("blue")
	_, member := s.NewUser(auth.RoleMember, red)
	_, viewer := s.NewUser(auth.RoleViewer, red)
	_, blueMember := s.NewUser(auth.RoleMember, blue)
	rcv := newReceiver(t, 200)
	body := map[string]any{"team_id": red, "name": "bot", "url": rcv.URL + "/hook", "events": []string{"run.finished"}}

	r := s.Do("POST", "/v1/webhooks", apitest.Req{Token: member, Body: body})
	if r.Status != 201 || !strings.HasPrefix(r.Map()["secret"].(string), "whsec_") {
		t.Fatalf("a member creates their team's subscription: %d %s", r.Status, r.Body)
	}
	id := r.Map()["id"].(string)
	if got := r.Map()["url"]; got != rcv.URL+"/…" {
		t.Errorf("url shown = %v, want only the host", got)
	}
	if g := s.Do("GET", "/v1/webhooks/"+id, apitest.Req{Token: viewer}); g.Status != 200 || g.Map()["secret"] != nil {
		t.Errorf("a viewer reads it: %d %s (and never the secret)", g.Status, g.Body)
	}
	if g := s.Do("PATCH", "/v1/webhooks/"+id, apitest.Req{Token: viewer, Body: map[string]any{"name": "x"}}); g.Status != 403 {
		t.Errorf("a viewer edits it: %d", g.Status)
	}
	for _, m := range []string{"GET", "DELETE"} {
		if g := s.Do(m, "/v1/webhooks/"+id, apitest.Req{Token: blueMember}); g.Status != 404 {
			t.Errorf("%s another team's subscription: %d, want 404", m, g.Status)
		}
	}
	if g := s.Do("GET", "/v1/webhooks/"+id+"/deliveries", apitest.Req{Token: blueMember}); g.Status != 404 {
		t.Errorf("another team's delivery log: %d, want 404", g.Status)
	}
	if g := s.Do("POST", "/v1/webhooks", apitest.Req{Token: blueMember, Body: body}); g.Status != 422 || !slices.Contains(g.Problem().Fields(), "team_id") {
		t.Errorf("a subscription for another team: %d %s, want 422 naming team_id", g.Status, g.Body)
	}
	global := map[string]any{"name": "all", "url": rcv.URL, "events": []string{"iso.built"}}
	if g := s.Do("POST", "/v1/webhooks", apitest.Req{Token: member, Body: global}); g.Status != 403 {
		t.Errorf("a member makes a global subscription: %d, want 403", g.Status)
	}
	if g := s.Do("POST", "/v1/webhooks", apitest.Req{Body: global}); g.Status != 201 || g.Map()["team_id"] != nil {
		t.Fatalf("an admin makes a global subscription: %d %s", g.Status, g.Body)
	}
	if l := s.Do("GET", "/v1/webhooks", apitest.Req{Token: member}); len(l.Map()["items"].([]any)) != 1 {
		t.Errorf("a member lists %s, want their team's only", l.Body)
	}
	if g := s.Do("PATCH", "/v1/webhooks/"+id, apitest.Req{Token: member, Body: map[string]any{"name": "y"},
		Headers: map[string]string{"If-Match": `"99"`}}); g.Status != 412 {
		t.Errorf("a stale If-Match: %d, want 412", g.Status)
	}
	for i := 1; i < 20; i++ {
		b := map[string]any{"team_id": red, "name": "bot" + string(rune('a'+i)), "url": rcv.URL, "events": []string{"run.finished"}}
		if g := s.Do("POST", "/v1/webhooks", apitest.Req{Token: member, Body: b}); g.Status != 201 {
			t.Fatalf("subscription %d: %d %s", i+1, g.Status, g.Body)
		}
	}
	body["name"] = "one-too-many"
	if g := s.Do("POST", "/v1/webhooks", apitest.Req{Token: member, Body: body}); g.Status != 422 || !slices.Contains(g.Problem().Fields(), "team_id") {
		t.Errorf("a 21st subscription: %d %s, want 422", g.Status, g.Body)
	}
	if g := s.Do("DELETE", "/v1/webhooks/"+id, apitest.Req{Token: member}); g.Status != 204 {
		t.Errorf("delete: %d", g.Status)
	}
}

// TestWebhookBadInput: each bad field is a 422 naming it, and nothing is written.
func TestWebhookBadInput(t *testing.T) {
	t.Parallel()
	resolve := func(_ context.Context, host string) ([]netip.Addr, error) {
		if host == "internal.example.test" {
			return []netip.Addr{netip.MustParseAddr("10.1.2.3")}, nil
		}
		return []netip.Addr{netip.MustParseAddr("203.0.113.7")}, nil
	}
	s := apitest.New(t, &apitest.Options{Webhooks: notify.Guard{Resolve: resolve}})
	team := s.NewTeam("red")
	before := s.State()
	tests := []struct {
		name, url string
		events    []string
		field     string
	}{
		{"not http", "ftp://hooks.example.test/x", []string{"run.finished"}, "url"},
		{"too long", "https://hooks.example.test/" + strings.Repeat("a", notify.MaxURLLength), []string{"run.finished"}, "url"},
		{"credentials", "https://bot:pw@hooks.example.test/x", []string{"run.finished"}, "url"},
		{"loopback", "http://127.0.0.1:9/x", []string{"run.finished"}, "url"},
		{"metadata", "http://169.254.169.254/latest", []string{"run.finished"}, "url"},
		{"private by name", "https://internal.example.test/x", []string{"run.finished"}, "url"},
		{"ipv6 loopback", "http://[::1]/x", []string{"run.finished"}, "url"},
		{"unknown event", "https://hooks.example.test/x", []string{"run.finished", "stack.exploded"}, "events[1]"},
		{"no event", "https://hooks.example.test/x", []string{}, "events"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := s.Do("POST", "/v1/webhooks", apitest.Req{Body: map[string]any{"team_id": team, "name": "bot", "url": tc.url, "events": tc.events}})
			if r.Status != 422 || !slices.Contains(r.Problem().Fields(), tc.field) {
				t.Fatalf("got %d %s, want 422 naming %s", r.Status, r.Body, tc.field)
			}
		})
	}
	if after := s.State(); after != before {
		t.Errorf("a refused subscription wrote:\n%s", after)
	}
}

// TestWebhookNullIsRefused: no field of a subscription may be null — in a PATCH it is a 422
// naming the field (not, as a pointer field once took it, "leave as is"), as is a null kind at
// creation — and a PATCH leaves the fields it does not carry as they are.
func TestWebhookNullIsRefused(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, &apitest.Options{Webhooks: loopback})
	team := s.NewTeam("red")
	rcv := newReceiver(t, 200)
	before := s.State()
	create := map[string]any{"team_id": team, "name": "bot", "kind": nil, "url": rcv.URL, "events": []string{"run.finished"}}
	if r := s.Do("POST", "/v1/webhooks", apitest.Req{Body: create}); r.Status != 422 || !slices.Equal(r.Problem().Fields(), []string{"kind"}) {
		t.Fatalf("create with a null kind: %d %s, want 422 naming kind", r.Status, r.Body)
	}
	if s.State() != before {
		t.Fatal("a refused creation wrote")
	}
	delete(create, "kind")
	create["enabled"] = true
	r := s.Do("POST", "/v1/webhooks", apitest.Req{Body: create})
	if r.Status != 201 || r.Map()["kind"] != "standard" {
		t.Fatalf("create without a kind: %d %s, want 201 of kind standard", r.Status, r.Body)
	}
	id := r.Map()["id"].(string)
	before = s.State()
	for _, field := range []string{"name", "kind", "url", "events", "enabled"} {
		g := s.Do("PATCH", "/v1/webhooks/"+id, apitest.Req{Body: map[string]any{field: nil}})
		if g.Status != 422 || !slices.Equal(g.Problem().Fields(), []string{field}) {
			t.Errorf("null %s: %d %s, want 422 naming it", field, g.Status, g.Body)
		}
	}
	if s.State() != before {
		t.Fatal("a refused null changed the database")
	}
	hits := rcv.hits.Load()
	g := s.Do("PATCH", "/v1/webhooks/"+id, apitest.Req{Body: map[string]any{"name": "renamed"}})
	if m := g.Map(); g.Status != 200 || m["name"] != "renamed" || m["kind"] != "standard" || m["enabled"] != true ||
		m["url"] != r.Map()["url"] || len(m["events"].([]any)) != 1 {
		t.Fatalf("rename: %d %s, want the other fields as they were", g.Status, g.Body)
	}
	if rcv.hits.Load() != hits {
		t.Errorf("a rename of an enabled subscription sent a test message")
	}
}

// TestEnablingSendsATestMessage: enabling refuses (422 naming enabled) unless the destination
// answers 2xx to a signed test message, which the reference library verifies.
func TestEnablingSendsATestMessage(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, &apitest.Options{Webhooks: loopback})
	team := s.NewTeam("red")
	rcv := newReceiver(t, 500)
	r := s.Do("POST", "/v1/webhooks", apitest.Req{Body: map[string]any{"team_id": team, "name": "bot", "url": rcv.URL, "events": []string{"run.finished"}}})
	if r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	id := r.Map()["id"].(string)
	wh, err := standardwebhooks.NewWebhook(r.Map()["secret"].(string))
	if err != nil {
		t.Fatal(err)
	}
	rcv.verifier.Store(wh)
	if rcv.hits.Load() != 0 {
		t.Fatalf("a disabled subscription's creation sent %d messages", rcv.hits.Load())
	}
	enable := map[string]any{"enabled": true}
	if g := s.Do("PATCH", "/v1/webhooks/"+id, apitest.Req{Body: enable}); g.Status != 422 || !slices.Contains(g.Problem().Fields(), "enabled") {
		t.Fatalf("enable with a 500 destination: %d %s, want 422 naming enabled", g.Status, g.Body)
	}
	if g := s.Do("GET", "/v1/webhooks/"+id, apitest.Req{}); g.Map()["enabled"] != false {
		t.Fatalf("refused, it is enabled anyway: %s", g.Body)
	}
	rcv.status.Store(204)
	if g := s.Do("PATCH", "/v1/webhooks/"+id, apitest.Req{Body: enable}); g.Status != 200 || g.Map()["enabled"] != true {
		t.Fatalf("enable with a 204 destination: %d %s", g.Status, g.Body)
	}
	if rcv.hits.Load() != 2 || rcv.badSigs.Load() != 0 {
		t.Errorf("%d test messages, %d with a bad signature; want 2 and 0", rcv.hits.Load(), rcv.badSigs.Load())
	}
}

// TestLastDeliveryAndDeliveryLogPages: a subscription carries its newest delivery, so that a
// list needs no request per row; the delivery log pages on past its first page, newest first,
// each delivery once.
func TestLastDeliveryAndDeliveryLogPages(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, &apitest.Options{Webhooks: loopback})
	red := s.NewTeam("red")
	rcv := newReceiver(t, 200)
	r := s.Do("POST", "/v1/webhooks", apitest.Req{Body: map[string]any{"team_id": red, "name": "bot", "url": rcv.URL + "/hook",
		"events": []string{"run.finished"}}})
	if r.Status != 201 || r.Map()["last_delivery"] != nil {
		t.Fatalf("create: %d %s (no delivery yet: last_delivery null)", r.Status, r.Body)
	}
	id := r.Map()["id"].(string)
	const n = 57 // more than a page (50)
	var newest string
	for range n {
		d := s.Do("POST", "/v1/webhooks/"+id+"/test", apitest.Req{})
		if d.Status != 202 {
			t.Fatalf("test: %d %s", d.Status, d.Body)
		}
		newest = d.Map()["id"].(string)
	}
	last := func(m map[string]any) string {
		ld, _ := m["last_delivery"].(map[string]any)
		if ld == nil {
			return ""
		}
		return ld["id"].(string)
	}
	if got := last(s.Do("GET", "/v1/webhooks/"+id, apitest.Req{}).Map()); got != newest {
		t.Errorf("GET: last_delivery %q, want the newest %q", got, newest)
	}
	list := s.Do("GET", "/v1/webhooks?team_id="+red.String(), apitest.Req{}).Map()["items"].([]any)
	if len(list) != 1 || last(list[0].(map[string]any)) != newest {
		t.Errorf("list: %v, want last_delivery %s", list, newest)
	}

	seen, cursor, pages := map[string]bool{}, "", 0
	for {
		path := "/v1/webhooks/" + id + "/deliveries"
		if cursor != "" {
			path += "?cursor=" + cursor
		}
		p := s.Do("GET", path, apitest.Req{})
		if p.Status != 200 {
			t.Fatalf("page %d: %d %s", pages, p.Status, p.Body)
		}
		pages++
		items := p.Map()["items"].([]any)
		if pages == 1 && (len(items) == 0 || items[0].(map[string]any)["id"] != newest) {
			t.Errorf("the first page does not start with the newest delivery")
		}
		for _, it := range items {
			did := it.(map[string]any)["id"].(string)
			if seen[did] {
				t.Errorf("delivery %s on two pages", did)
			}
			seen[did] = true
		}
		next, _ := p.Map()["next_cursor"].(string)
		if next == "" {
			break
		}
		cursor = next
	}
	if len(seen) != n || pages != 2 {
		t.Errorf("%d deliveries over %d pages, want %d over 2", len(seen), pages, n)
	}
}
