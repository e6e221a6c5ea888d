package me_test

import (
	"testing"

	"horizon/functions/apitest"
)

// TestMeTellsTheTokensScope: /v1/me says what the calling token may call, so that a bot or the
// console can tell what to offer without trying.
func TestMeTellsTheTokensScope(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, nil)
	if got := s.Do("GET", "/v1/me", apitest.Req{}).Map()["token_scope"]; got != "full" {
		t.Errorf("the admin's full token: token_scope %v", got)
	}
	for _, scope := range []string{"read", "deploy", "full"} {
		r := s.Do("POST", "/v1/tokens", apitest.Req{Body: map[string]any{"name": "bot-" + scope, "scope": scope}})
		if r.Status != 201 {
			t.Fatalf("mint %s: %d %s", scope, r.Status, r.Body)
		}
		me := s.Do("GET", "/v1/me", apitest.Req{Token: r.Map()["token"].(string)})
		if me.Status != 200 || me.Map()["token_scope"] != scope || me.Map()["token_id"] != r.Map()["id"] {
			t.Errorf("a %s token: %d %s", scope, me.Status, me.Body)
		}
	}
}
