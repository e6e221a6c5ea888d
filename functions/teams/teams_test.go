package teams_test

import (
	"testing"

	"horizon/functions/apitest"
	"horizon/shared/auth"
)

func TestTeams(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, nil)
	red := s.Do("POST", "/v1/teams", apitest.Req{Body: map[string]any{"name": "red"}})
	if red.Status != 201 {
		t.Fatalf("create: %d %s", red.Status, red.Body)
	}
	redID := red.Map()["id"].(string)
	blue := s.NewTeam("blue")
	_, member := s.NewUser(auth.RoleMember, blue)
	_, viewer := s.NewUser(auth.RoleViewer, blue)

	if r := s.Do("POST", "/v1/teams", apitest.Req{Body: map[string]any{"name": "red"}}); r.Status != 409 || r.Problem().Fields()[0] != "name" {
		t.Fatalf("duplicate name: %d %s", r.Status, r.Body)
	}
	if r := s.Do("POST", "/v1/teams", apitest.Req{Token: member, Body: map[string]any{"name": "green"}}); r.Status != 403 {
		t.Fatalf("member on an admin route: %d, want 403", r.Status)
	}
	if r := s.Do("GET", "/v1/teams/"+redID, apitest.Req{Token: member}); r.Status != 404 {
		t.Fatalf("another team's object: %d, want 404", r.Status)
	}
	if r := s.Do("GET", "/v1/teams/"+blue.String(), apitest.Req{Token: viewer}); r.Status != 200 {
		t.Fatalf("viewer reads their team: %d", r.Status)
	}
	if l := s.Do("GET", "/v1/teams", apitest.Req{Token: member}).Map(); len(l["items"].([]any)) != 1 {
		t.Fatalf("member lists %v, want only blue", l)
	}
	if l := s.Do("GET", "/v1/teams", apitest.Req{}).Map(); len(l["items"].([]any)) != 2 {
		t.Fatalf("admin lists %v, want both", l)
	}

	ok := s.Do("PATCH", "/v1/teams/"+redID, apitest.Req{Body: map[string]any{"name": "crimson"}, Headers: map[string]string{"If-Match": `"1"`}})
	if ok.Status != 200 || ok.Header.Get("ETag") != `"2"` || ok.Map()["name"] != "crimson" {
		t.Fatalf("patch: %d %s %s", ok.Status, ok.Header.Get("ETag"), ok.Body)
	}
	before := s.State()
	if r := s.Do("PATCH", "/v1/teams/"+redID, apitest.Req{Body: map[string]any{"name": "scarlet"}, Headers: map[string]string{"If-Match": `"1"`}}); r.Status != 412 {
		t.Fatalf("stale If-Match: %d, want 412", r.Status)
	}
	if r := s.Do("PATCH", "/v1/teams/"+redID, apitest.Req{Body: map[string]any{"name": "scarlet"}, Headers: map[string]string{"If-Match": "garbage"}}); r.Status != 412 {
		t.Fatalf("garbage If-Match: %d, want 412", r.Status)
	}
	if r := s.Do("PATCH", "/v1/teams/"+redID, apitest.Req{Body: map[string]any{"name": nil}}); r.Status != 422 ||
		len(r.Problem().Fields()) != 1 || r.Problem().Fields()[0] != "name" {
		t.Fatalf("null name: %d %s, want 422 naming name", r.Status, r.Body)
	}
	if s.State() != before {
		t.Fatal("a stale write or a null name changed the database")
	}
	if r := s.Do("PATCH", "/v1/teams/018f0000-0000-7000-8000-000000000000", apitest.Req{Body: map[string]any{"name": "x"}}); r.Status != 404 {
		t.Fatalf("patch a missing team: %d, want 404", r.Status)
	}
}
