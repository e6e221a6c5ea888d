package users_test

import (
	"testing"

	"horizon/functions/apitest"
	"horizon/shared/auth"
)

func TestUsers(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, nil)
	blue, red := s.NewTeam("blue"), s.NewTeam("red")
	_, member := s.NewUser(auth.RoleMember, blue)

	r := s.Do("POST", "/v1/users", apitest.Req{Body: map[string]any{"name": "Ana", "email": "ana@example.org", "role": "member", "teams": []string{blue.String()}}})
	if r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	ana := r.Map()
	tests := []struct {
		name       string
		token      string
		body       map[string]any
		wantStatus int
		wantFields []string
	}{
		{"unknown team", "", map[string]any{"name": "B", "email": "b@example.org", "role": "member", "teams": []string{"018f0000-0000-7000-8000-000000000000"}}, 422, []string{"teams[0]"}},
		{"bad role and email", "", map[string]any{"name": "B", "email": "not an email", "role": "root"}, 422, []string{"email", "role"}},
		{"duplicate email", "", map[string]any{"name": "A2", "email": "ANA@example.org", "role": "viewer"}, 409, []string{"email"}},
		{"member", member, map[string]any{"name": "B", "email": "b@example.org", "role": "member"}, 403, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := s.State()
			r := s.Do("POST", "/v1/users", apitest.Req{Token: tc.token, Body: tc.body})
			p := r.Problem()
			if r.Status != tc.wantStatus || len(p.Fields()) != len(tc.wantFields) {
				t.Fatalf("got %d %v, want %d %v", r.Status, p.Fields(), tc.wantStatus, tc.wantFields)
			}
			for i, f := range tc.wantFields {
				if p.Fields()[i] != f {
					t.Fatalf("fields %v, want %v", p.Fields(), tc.wantFields)
				}
			}
			if s.State() != before {
				t.Fatal("the rejected request changed the database")
			}
		})
	}

	id := ana["id"].(string)
	if r := s.Do("GET", "/v1/users/"+id, apitest.Req{Token: member}); r.Status != 200 {
		t.Fatalf("member reads a teammate: %d", r.Status)
	}
	_, outsider := s.NewUser(auth.RoleMember, red)
	if r := s.Do("GET", "/v1/users/"+id, apitest.Req{Token: outsider}); r.Status != 404 {
		t.Fatalf("member of another team reads ana: %d, want 404", r.Status)
	}
	p := s.Do("PATCH", "/v1/users/"+id, apitest.Req{Body: map[string]any{"role": "viewer", "teams": []string{red.String()}}, Headers: map[string]string{"If-Match": `"1"`}})
	if p.Status != 200 || p.Map()["role"] != "viewer" || p.Map()["teams"].([]any)[0] != red.String() {
		t.Fatalf("patch: %d %s", p.Status, p.Body)
	}
	if m := p.Map(); m["name"] != ana["name"] || m["email"] != ana["email"] {
		t.Errorf("a patch of role and teams changed name or email: %s, was %v", p.Body, ana)
	}
	before := s.State()
	for _, field := range []string{"name", "email", "role", "teams"} {
		r := s.Do("PATCH", "/v1/users/"+id, apitest.Req{Body: map[string]any{field: nil}})
		if f := r.Problem().Fields(); r.Status != 422 || len(f) != 1 || f[0] != field {
			t.Errorf("null %s: %d %s, want 422 naming it", field, r.Status, r.Body)
		}
	}
	if s.State() != before {
		t.Fatal("a refused null changed the database")
	}
	if r := s.Do("PATCH", "/v1/users/"+s.AdminID.String(), apitest.Req{Body: map[string]any{"role": "member"}}); r.Status != 422 {
		t.Fatalf("an admin demotes themselves: %d, want 422", r.Status)
	}
	if r := s.Do("PATCH", "/v1/users/"+id, apitest.Req{Body: map[string]any{"role": "admin"}, Headers: map[string]string{"If-Match": `"1"`}}); r.Status != 412 {
		t.Fatalf("stale: %d, want 412", r.Status)
	}
	me := s.Do("GET", "/v1/me", apitest.Req{Token: member}).Map()
	if me["role"] != "member" || me["teams"].([]any)[0] != blue.String() || me["token_id"] == nil {
		t.Fatalf("me: %v", me)
	}
}
