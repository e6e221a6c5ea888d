package tokens_test

import (
	"strings"
	"testing"

	"horizon/functions/apitest"
	"horizon/shared/auth"
)

func TestTokens(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, nil)
	memberID, member := s.NewUser(auth.RoleMember)
	_, viewer := s.NewUser(auth.RoleViewer)

	r := s.Do("POST", "/v1/tokens", apitest.Req{Token: viewer, Body: map[string]any{"name": "dashboard"}})
	if r.Status != 201 {
		t.Fatalf("a viewer mints their own token: %d %s", r.Status, r.Body)
	}
	minted := r.Map()
	tok := minted["token"].(string)
	if !strings.HasPrefix(tok, "hzn_") || s.Do("GET", "/v1/me", apitest.Req{Token: tok}).Status != 200 {
		t.Fatalf("minted token %q does not work", tok)
	}
	var stored int
	if err := s.DB.QueryRow(t.Context(), `SELECT count(*) FROM api_tokens WHERE hash = $1`, auth.HashToken(tok)).Scan(&stored); err != nil || stored != 1 {
		t.Fatalf("token hash stored %d times (%v)", stored, err)
	}
	if list := s.Do("GET", "/v1/tokens", apitest.Req{Token: viewer}); strings.Contains(string(list.Body), tok) {
		t.Fatal("the token itself is listed")
	}

	if r := s.Do("POST", "/v1/tokens", apitest.Req{Token: member, Body: map[string]any{"user_id": s.AdminID, "name": "steal"}}); r.Status != 403 {
		t.Fatalf("member mints for an admin: %d, want 403", r.Status)
	}
	if r := s.Do("POST", "/v1/tokens", apitest.Req{Body: map[string]any{"user_id": memberID, "name": "bot"}}); r.Status != 201 {
		t.Fatalf("admin mints for a member: %d", r.Status)
	}
	if r := s.Do("POST", "/v1/tokens", apitest.Req{Body: map[string]any{"user_id": "018f0000-0000-7000-8000-000000000000", "name": "x"}}); r.Status != 422 {
		t.Fatalf("admin mints for nobody: %d, want 422", r.Status)
	}
	if r := s.Do("GET", "/v1/tokens?user_id="+s.AdminID.String(), apitest.Req{Token: member}); r.Status != 403 {
		t.Fatalf("member lists an admin's tokens: %d, want 403", r.Status)
	}
	if l := s.Do("GET", "/v1/tokens?user_id="+memberID.String(), apitest.Req{}).Map(); len(l["items"].([]any)) != 2 {
		t.Fatalf("admin lists the member's tokens: %v", l)
	}

	id := minted["id"].(string)
	if r := s.Do("DELETE", "/v1/tokens/"+id, apitest.Req{Token: member}); r.Status != 404 {
		t.Fatalf("member revokes the viewer's token: %d, want 404", r.Status)
	}
	if r := s.Do("DELETE", "/v1/tokens/"+id, apitest.Req{Token: viewer}); r.Status != 204 {
		t.Fatalf("owner revokes: %d", r.Status)
	}
	if r := s.Do("GET", "/v1/me", apitest.Req{Token: tok}); r.Status != 401 {
		t.Fatalf("revoked token: %d, want 401", r.Status)
	}
}
