package teams_test

import (
	"reflect"
	"sort"
	"testing"

	"horizon/functions/apitest"
	"horizon/shared/auth"
)

func TestQuotas(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, nil)
	blue := s.NewTeam("blue")
	red := s.NewTeam("red")
	_, member := s.NewUser(auth.RoleMember, blue)
	_, viewer := s.NewUser(auth.RoleViewer, blue)
	net := s.Do("POST", "/v1/networks", apitest.Req{Body: map[string]any{"name": "n", "cidr": "10.9.0.0/24", "gateway": "10.9.0.1", "dns": []string{"10.9.0.53"}, "bridge": "vmbr0"}})
	env := s.Do("POST", "/v1/environments", apitest.Req{Body: map[string]any{"name": "prod", "network_ids": []string{net.Map()["id"].(string)}, "proxmox_server_ids": []string{}}})
	if env.Status != 201 {
		t.Fatalf("environment: %d %s", env.Status, env.Body)
	}
	envID := env.Map()["id"].(string)
	path := "/v1/teams/" + blue.String() + "/quotas"

	// No quota: unlimited, version 0, and usage without limits.
	r := s.Do("GET", path, apitest.Req{Token: viewer})
	if r.Status != 200 || r.Map()["version"].(float64) != 0 || r.Map()["limits"].(map[string]any)["vcpus"] != nil {
		t.Fatalf("no quota yet: %d %s", r.Status, r.Body)
	}
	u := s.Do("GET", "/v1/teams/"+blue.String()+"/usage", apitest.Req{Token: viewer})
	if u.Status != 200 || u.Map()["vcpus"].(map[string]any)["remaining"] != nil || u.Map()["vcpus"].(map[string]any)["used"].(float64) != 0 {
		t.Fatalf("viewer reads the usage of an unlimited team: %d %s", u.Status, u.Body)
	}

	// An admin sets them; members and viewers may not.
	body := map[string]any{"limits": map[string]any{"machines": 10, "vcpus": 20}, "environments": map[string]any{envID: map[string]any{"vcpus": 8}}}
	for _, tok := range []string{member, viewer} {
		if r := s.Do("PUT", path, apitest.Req{Token: tok, Body: body}); r.Status != 403 {
			t.Fatalf("a non-admin sets quotas: %d, want 403", r.Status)
		}
	}
	put := s.Do("PUT", path, apitest.Req{Body: body})
	if put.Status != 200 || put.Header.Get("ETag") != `"1"` {
		t.Fatalf("put: %d %s", put.Status, put.Body)
	}
	u = s.Do("GET", "/v1/teams/"+blue.String()+"/usage", apitest.Req{Token: viewer})
	vcpus := u.Map()["vcpus"].(map[string]any)
	if vcpus["limit"].(float64) != 20 || vcpus["remaining"].(float64) != 20 {
		t.Fatalf("usage after the put: %s", u.Body)
	}
	envs := u.Map()["environments"].([]any)
	if len(envs) != 1 || envs[0].(map[string]any)["vcpus"].(map[string]any)["remaining"].(float64) != 8 {
		t.Fatalf("the environment's narrowing: %s", u.Body)
	}

	// PATCH changes what it gives, honouring If-Match.
	patch := s.Do("PATCH", path, apitest.Req{Body: map[string]any{"limits": map[string]any{"machines": nil, "disk_gib": 100}}, Headers: map[string]string{"If-Match": `"1"`}})
	lim := patch.Map()["limits"].(map[string]any)
	if patch.Status != 200 || lim["machines"] != nil || lim["vcpus"].(float64) != 20 || lim["disk_gib"].(float64) != 100 || len(patch.Map()["environments"].(map[string]any)) != 1 {
		t.Fatalf("patch: %d %s", patch.Status, patch.Body)
	}
	before := s.State()
	if r := s.Do("PATCH", path, apitest.Req{Body: map[string]any{"limits": map[string]any{"vcpus": 1}}, Headers: map[string]string{"If-Match": `"1"`}}); r.Status != 412 {
		t.Fatalf("stale If-Match: %d, want 412", r.Status)
	}
	// Bad input: 422 naming every field, nothing written.
	bad := []struct {
		name   string
		body   any
		fields []string
	}{
		{"negative", map[string]any{"limits": map[string]any{"vcpus": -1}}, []string{"limits.vcpus"}},
		{"not an integer", map[string]any{"limits": map[string]any{"memory_mib": 1.5}}, []string{"limits.memory_mib"}},
		{"a string", map[string]any{"limits": map[string]any{"machines": "10"}}, []string{"limits.machines"}},
		{"unknown dimension", map[string]any{"limits": map[string]any{"gpus": 2}}, []string{"limits.gpus"}},
		{"unknown environment", map[string]any{"environments": map[string]any{"018f0000-0000-7000-8000-000000000000": map[string]any{"vcpus": 1}}},
			[]string{"environments.018f0000-0000-7000-8000-000000000000"}},
		{"not an environment id", map[string]any{"environments": map[string]any{"prod": map[string]any{"vcpus": 1}}}, []string{"environments.prod"}},
		{"bad limit of an environment", map[string]any{"environments": map[string]any{envID: map[string]any{"disk_gib": -5}}}, []string{"environments." + envID + ".disk_gib"}},
		{"unknown field", map[string]any{"limit": map[string]any{}}, []string{"limit"}},
		{"all at once", map[string]any{"limits": map[string]any{"vcpus": -1, "gpus": 1}}, []string{"limits.gpus", "limits.vcpus"}},
	}
	for _, tc := range bad {
		for _, method := range []string{"PUT", "PATCH"} {
			r := s.Do(method, path, apitest.Req{Body: tc.body})
			fields := r.Problem().Fields()
			sort.Strings(fields)
			if r.Status != 422 || !reflect.DeepEqual(fields, tc.fields) {
				t.Fatalf("%s %s: %d %q (%s), want 422 %q", method, tc.name, r.Status, fields, r.Body, tc.fields)
			}
		}
	}
	if s.State() != before {
		t.Fatal("a refused quota changed the database")
	}

	// PATCH null removes an environment's narrowing; PUT replaces everything.
	if r := s.Do("PATCH", path, apitest.Req{Body: map[string]any{"environments": map[string]any{envID: nil}}}); r.Status != 200 || len(r.Map()["environments"].(map[string]any)) != 0 {
		t.Fatalf("patch an environment away: %d %s", r.Status, r.Body)
	}
	if r := s.Do("PUT", path, apitest.Req{Body: map[string]any{"limits": map[string]any{"machines": 3}}}); r.Status != 200 || r.Map()["limits"].(map[string]any)["vcpus"] != nil {
		t.Fatalf("put replaces: %d %s", r.Status, r.Body)
	}

	// Another team's quotas and usage are 404 to a member; a missing team is 404 to an admin.
	for _, p := range []string{"/v1/teams/" + red.String() + "/quotas", "/v1/teams/" + red.String() + "/usage"} {
		if r := s.Do("GET", p, apitest.Req{Token: member}); r.Status != 404 {
			t.Fatalf("%s by another team's member: %d, want 404", p, r.Status)
		}
	}
	if r := s.Do("PUT", "/v1/teams/018f0000-0000-7000-8000-000000000000/quotas", apitest.Req{Body: map[string]any{}}); r.Status != 404 {
		t.Fatalf("quotas of a missing team: %d, want 404", r.Status)
	}
}
