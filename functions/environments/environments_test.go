package environments_test

import (
	"slices"
	"testing"

	"horizon/functions/apitest"
	"horizon/shared/auth"
	"horizon/shared/nagios/nagiostest"
)

func TestEnvironments(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, nil)
	net := s.Do("POST", "/v1/networks", apitest.Req{Body: map[string]any{"name": "n", "cidr": "10.1.0.0/24", "gateway": "10.1.0.1", "bridge": "vmbr0"}}).Map()
	r := s.Do("POST", "/v1/environments", apitest.Req{Body: map[string]any{"name": "production", "description": "Customer facing", "network_ids": []any{net["id"]}}})
	if r.Status != 201 || r.Map()["network_ids"].([]any)[0] != net["id"] {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	env := r.Map()
	_, member := s.NewUser(auth.RoleMember)
	before := s.State()
	for name, tc := range map[string]struct {
		token  string
		body   map[string]any
		status int
	}{
		"unknown network":  {"", map[string]any{"name": "x", "network_ids": []string{"018f0000-0000-7000-8000-000000000000"}}, 422},
		"network twice":    {"", map[string]any{"name": "x", "network_ids": []any{net["id"], net["id"]}}, 422},
		"duplicate name":   {"", map[string]any{"name": "production"}, 409},
		"member":           {member, map[string]any{"name": "x"}, 403},
		"control in names": {"", map[string]any{"name": "a\x00b"}, 422},
	} {
		if got := s.Do("POST", "/v1/environments", apitest.Req{Token: tc.token, Body: tc.body}); got.Status != tc.status {
			t.Errorf("%s: got %d %s, want %d", name, got.Status, got.Body, tc.status)
		}
	}
	if s.State() != before {
		t.Fatal("rejected requests changed the database")
	}
	id := env["id"].(string)
	p := s.Do("PATCH", "/v1/environments/"+id, apitest.Req{Body: map[string]any{"network_ids": []string{}}, Headers: map[string]string{"If-Match": `"1"`}})
	if p.Status != 200 || len(p.Map()["network_ids"].([]any)) != 0 || p.Map()["description"] != "Customer facing" {
		t.Fatalf("patch: %d %s", p.Status, p.Body)
	}
	// null on a field that is not nullable is refused, naming it, and changes nothing; null
	// unsets the nagios server; the fields left out keep their values.
	before = s.State()
	for _, field := range []string{"name", "description", "network_ids", "proxmox_server_ids"} {
		r := s.Do("PATCH", "/v1/environments/"+id, apitest.Req{Body: map[string]any{field: nil, "nagios_server_id": nil}})
		if r.Status != 422 || !slices.Equal(r.Problem().Fields(), []string{field}) {
			t.Errorf("null %s: got %d %s, want 422 naming it", field, r.Status, r.Body)
		}
	}
	if s.State() != before {
		t.Fatal("a refused null changed the database")
	}
	n := nagiostest.Start(t, nagiostest.Options{})
	nagiosID := s.Do("POST", "/v1/nagios-servers", apitest.Req{Body: n.Registration("nagios")}).Map()["id"]
	if p = s.Do("PATCH", "/v1/environments/"+id, apitest.Req{Body: map[string]any{"nagios_server_id": nagiosID}}); p.Status != 200 ||
		p.Map()["nagios_server_id"] != nagiosID || nagiosID == nil {
		t.Fatalf("set the nagios server: %d %s", p.Status, p.Body)
	}
	p = s.Do("PATCH", "/v1/environments/"+id, apitest.Req{Body: map[string]any{"nagios_server_id": nil, "name": "prod"}})
	if m := p.Map(); p.Status != 200 || m["nagios_server_id"] != nil || m["name"] != "prod" || m["description"] != "Customer facing" ||
		len(m["network_ids"].([]any)) != 0 {
		t.Fatalf("patch with null nagios_server_id: %d %s", p.Status, p.Body)
	}
	if g := s.Do("GET", "/v1/environments/"+id, apitest.Req{Token: member}); g.Status != 200 {
		t.Fatalf("member reads: %d", g.Status)
	}
}
