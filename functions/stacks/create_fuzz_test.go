package stacks_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"horizon/functions/apitest"
	"horizon/functions/apitest/labtest"
)

// FuzzStackBodies sends any body to POST /v1/stacks (with any Idempotency-Key) and to
// PATCH /v1/stacks/{id} (with any If-Match) through the real app, decoder and validator, on a
// real database. Its properties: never a 5xx; every refusal is a problem+json that matches
// openapi.yaml (apitest checks every response), a 422 names at least one field, and a refused
// request writes no stack or execution; a request repeated with the same valid
// Idempotency-Key gets the same answer.
func FuzzStackBodies(f *testing.F) {
	e := labtest.New(f, labtest.Options{})
	draft := e.Draft("fuzzed", 1)
	body := func(v any) []byte { b, _ := json.Marshal(v); return b }
	create := map[string]any{"team_id": e.Team, "name": "x", "environment_id": e.Env, "template_id": e.Tmpl, "template_version": 1,
		"labels": []string{"web", "tier-1"},
		"jobs":   map[string]any{"app": map[string]any{"executions": []any{map[string]any{"parameters": map[string]any{"memory_mb": 999}}}}}}
	f.Add(false, body(create), "", "key-1")
	f.Add(false, body(map[string]any{"team_id": e.Team, "name": "x", "environment_id": e.Env, "template_id": e.Tmpl, "template_version": 1,
		"state": "deployed"}), "", "")
	f.Add(false, []byte(`{"team_id":`), "", "k")
	f.Add(false, []byte(`{"name":"x"} {"name":"y"}`), "", "")
	f.Add(false, []byte(`{"jobs":{"app":{"executions":[{"parameters":{"admin_password":7}}]}}}`), "", "\x7f")
	f.Add(true, body(map[string]any{"jobs": map[string]any{"db": map[string]any{"executions": []any{e.Machine(0, nil)}},
		"app": map[string]any{"executions": []any{e.Machine(1, nil)}}}}), "", "")
	f.Add(true, body(map[string]any{"description": "d", "labels": []string{"Not A Tag"}}), `W/"1"`, "")
	f.Add(true, body(map[string]any{"name": nil}), "*", "")
	f.Add(true, []byte(`[]`), `"99999999999999999999"`, "")

	f.Fuzz(func(t *testing.T, patch bool, raw []byte, ifMatch, key string) {
		api := e.API.For(t)
		if !headerSafe(ifMatch) || !headerSafe(key) {
			return // no HTTP client sends these
		}
		var method, path string
		headers := map[string]string{}
		if patch {
			method, path = http.MethodPatch, "/v1/stacks/"+draft
			if ifMatch == "" { // the current version: the body reaches the validator
				ifMatch = api.Do("GET", path, apitest.Req{Token: e.Member}).Header.Get("ETag")
			}
			headers["If-Match"] = ifMatch
		} else {
			method, path = http.MethodPost, "/v1/stacks"
			if key != "" {
				headers["Idempotency-Key"] = key
			}
		}
		before := stacksDigest(t, e)
		r := api.Do(method, path, apitest.Req{Token: e.Member, Body: raw, Headers: headers})
		if r.Status >= 500 {
			t.Fatalf("%s %s answered %d: %s", method, path, r.Status, r.Body)
		}
		if r.Status >= 400 {
			if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/problem+json") {
				t.Fatalf("%d with Content-Type %q", r.Status, ct)
			}
			// A reused Idempotency-Key is a 422 of its own type, about the header, not a field.
			if r.Status == http.StatusUnprocessableEntity && r.Problem().Type == "urn:horizon:problem:invalid" && len(r.Problem().Fields()) == 0 {
				t.Fatalf("422 naming no field: %s", r.Body)
			}
			if after := stacksDigest(t, e); after != before {
				t.Fatalf("a refused %s (%d) changed the stacks", method, r.Status)
			}
		}
		// Surrounding blanks are not part of a header value (RFC 9110 §5.5): a key of only
		// blanks is no key, and each request is its own.
		// A key an earlier input used with another body is refused each time, not replayed.
		reused := r.Status == http.StatusUnprocessableEntity && r.Problem().Type == "urn:horizon:problem:idempotency-key-reused"
		if !patch && strings.Trim(key, " \t") != "" && r.Status != http.StatusBadRequest && !reused {
			again := api.Do(method, path, apitest.Req{Token: e.Member, Body: raw, Headers: headers})
			if again.Status != r.Status || string(again.Body) != string(r.Body) {
				t.Fatalf("the same Idempotency-Key answered %d %s, then %d %s", r.Status, r.Body, again.Status, again.Body)
			}
		}
	})
}

// headerSafe reports whether an HTTP client can send v as a header value: no control bytes.
func headerSafe(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// stacksDigest is a digest of every stack and execution row.
func stacksDigest(t *testing.T, e *labtest.Lab) string {
	t.Helper()
	var d *string
	err := e.API.DB.QueryRow(t.Context(), `SELECT md5(coalesce((SELECT string_agg(r::text, ',' ORDER BY r::text) FROM stacks r), '') ||
		coalesce((SELECT string_agg(x::text, ',' ORDER BY x::text) FROM executions x), ''))`).Scan(&d)
	if err != nil {
		t.Fatal(err)
	}
	return *d
}
