package signin_test

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"

	"horizon/functions/apitest"
	"horizon/shared/auth"
)

// mint makes a sign-in code with token (the admin's when "") and returns it.
func mint(t *testing.T, s *apitest.Server, token string) string {
	t.Helper()
	r := s.Do("POST", "/v1/sign-in-codes", apitest.Req{Token: token})
	if r.Status != 201 || r.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("mint: %d %s (Cache-Control %q)", r.Status, r.Body, r.Header.Get("Cache-Control"))
	}
	code := r.Map()["code"].(string)
	if !strings.HasPrefix(code, auth.SignInCodePrefix) {
		t.Fatalf("code %q lacks the %s prefix", code, auth.SignInCodePrefix)
	}
	return code
}

func exchange(s *apitest.Server, code string) *apitest.Response {
	return s.Do("POST", "/v1/sign-in", apitest.Req{Token: apitest.NoToken, Body: map[string]any{"code": code}})
}

// TestSignInCodeIsGoodOnce: the code answers the exact token that minted it, once; a reuse is
// 401, and the code is gone from the database.
func TestSignInCodeIsGoodOnce(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, nil)
	_, member := s.NewUser(auth.RoleMember)
	code := mint(t, s, member)

	r := exchange(s, code)
	if r.Status != 200 || r.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("exchange: %d %s", r.Status, r.Body)
	}
	if got := r.Map()["token"]; got != member {
		t.Fatalf("exchange answered token %v, want the member's that minted the code", got)
	}
	if p := exchange(s, code).Problem(); p.Status != 401 {
		t.Fatalf("second exchange: %+v, want 401", p)
	}
	var left int
	if err := s.DB.QueryRow(context.Background(), `SELECT count(*) FROM sign_in_codes`).Scan(&left); err != nil || left != 0 {
		t.Fatalf("sign_in_codes holds %d rows after the exchange (%v), want 0", left, err)
	}
}

// TestSignInCodeExchangedTwiceAtOnce: of two exchanges racing with one code, one gets the token.
func TestSignInCodeExchangedTwiceAtOnce(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, nil)
	for range 5 {
		code := mint(t, s, "")
		var wg sync.WaitGroup
		statuses := make([]int, 2)
		for i := range statuses {
			wg.Add(1)
			go func() {
				defer wg.Done()
				statuses[i] = exchange(s, code).Status
			}()
		}
		wg.Wait()
		if (statuses[0] == 200) == (statuses[1] == 200) || statuses[0]+statuses[1] != 200+401 {
			t.Fatalf("two exchanges of one code at once: %v, want one 200 and one 401", statuses)
		}
	}
}

// TestSignInCodeExpires: past its expiry a code is refused like a used one, and the next mint
// sweeps it from the table.
func TestSignInCodeExpires(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := apitest.New(t, nil)
	code := mint(t, s, "")
	var minutes float64
	if err := s.DB.QueryRow(ctx, `SELECT extract(epoch FROM expires_at - created_at) / 60 FROM sign_in_codes`).Scan(&minutes); err != nil || minutes != 10 {
		t.Fatalf("a code lives %v minutes (%v), want 10", minutes, err)
	}
	// Ten minutes pass.
	if _, err := s.DB.Exec(ctx, `UPDATE sign_in_codes SET expires_at = now() - interval '1 second'`); err != nil {
		t.Fatal(err)
	}
	if p := exchange(s, code).Problem(); p.Status != 401 || !strings.Contains(p.Detail, "expired") {
		t.Fatalf("expired code: %+v, want 401", p)
	}
	fresh := mint(t, s, "")
	var rows int
	if err := s.DB.QueryRow(ctx, `SELECT count(*) FROM sign_in_codes`).Scan(&rows); err != nil || rows != 1 {
		t.Fatalf("after the next mint sign_in_codes holds %d rows (%v), want only the fresh one", rows, err)
	}
	if r := exchange(s, fresh); r.Status != 200 {
		t.Fatalf("fresh code: %d %s", r.Status, r.Body)
	}
}

// TestSignInCodeOfARevokedToken: revoking the token that minted a code voids the code.
func TestSignInCodeOfARevokedToken(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, nil)
	_, member := s.NewUser(auth.RoleViewer)
	code := mint(t, s, member)
	me := s.Do("GET", "/v1/me", apitest.Req{Token: member}).Map()
	if r := s.Do("DELETE", "/v1/tokens/"+me["token_id"].(string), apitest.Req{}); r.Status/100 != 2 {
		t.Fatalf("revoke: %d %s", r.Status, r.Body)
	}
	if p := exchange(s, code).Problem(); p.Status != 401 {
		t.Fatalf("code of a revoked token: %+v, want 401", p)
	}
}

// TestSignInCodeStoredHashedAndSealed: the table holds neither the code nor the token in clear.
func TestSignInCodeStoredHashedAndSealed(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, nil)
	code := mint(t, s, "")
	var hash, sealed []byte
	if err := s.DB.QueryRow(context.Background(), `SELECT hash, sealed_token FROM sign_in_codes`).Scan(&hash, &sealed); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(hash, auth.HashToken(code)) {
		t.Fatalf("the stored hash is not the code's SHA-256")
	}
	for _, clear := range []string{code, s.Admin, strings.TrimPrefix(s.Admin, auth.TokenPrefix)} {
		if bytes.Contains(hash, []byte(clear)) || bytes.Contains(sealed, []byte(clear)) {
			t.Fatalf("sign_in_codes holds %q in clear", clear)
		}
	}
}

// TestSignInRefusesBadInput: the field is named; nothing is spent.
func TestSignInRefusesBadInput(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, nil)
	if p := exchange(s, "").Problem(); p.Status != 422 || len(p.Fields()) != 1 || p.Fields()[0] != "code" {
		t.Fatalf("empty code: %+v, want 422 naming code", p)
	}
	if p := s.Do("POST", "/v1/sign-in", apitest.Req{Token: apitest.NoToken, Body: map[string]any{"code": "x", "token": "y"}}).Problem(); p.Status != 422 || p.Fields()[0] != "token" {
		t.Fatalf("unknown field: %+v, want 422 naming token", p)
	}
	if p := s.Do("POST", "/v1/sign-in", apitest.Req{Token: apitest.NoToken, Body: "{"}).Problem(); p.Status != 400 {
		t.Fatalf("malformed JSON: %+v, want 400", p)
	}
	if p := exchange(s, "hzc_not-a-code").Problem(); p.Status != 401 {
		t.Fatalf("unknown code: %+v, want 401", p)
	}
	if p := s.Do("POST", "/v1/sign-in-codes", apitest.Req{Token: apitest.NoToken}).Problem(); p.Status != 401 {
		t.Fatalf("mint without a token: %+v, want 401", p)
	}
}

// syncBuffer is a log destination the server's goroutines share.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestSignInCodeIsNeverLogged: with every request logged (debug), neither a code nor the token
// it stands for reaches the API's log, whether the exchange succeeds, is a reuse or malformed.
func TestSignInCodeIsNeverLogged(t *testing.T) {
	t.Parallel()
	logs := &syncBuffer{}
	s := apitest.New(t, &apitest.Options{Log: logs})
	code := mint(t, s, "")
	exchange(s, code)
	exchange(s, code)
	s.Do("POST", "/v1/sign-in", apitest.Req{Token: apitest.NoToken, Body: `{"code": "` + code + `", "oops": 1}`})
	out := logs.String()
	if !strings.Contains(out, "/v1/sign-in") {
		t.Fatalf("the requests were not logged at all:\n%s", out)
	}
	for _, secret := range []string{code, strings.TrimPrefix(code, auth.SignInCodePrefix), s.Admin} {
		if strings.Contains(out, secret) {
			t.Fatalf("the log holds %q:\n%s", secret, out)
		}
	}
}

// TestSignInCodeIsNotKeptForReplay: an Idempotency-Key does not make the API keep the answer,
// which holds the code in clear; a retry mints another code.
func TestSignInCodeIsNotKeptForReplay(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, nil)
	key := map[string]string{"Idempotency-Key": "retry-1"}
	a := s.Do("POST", "/v1/sign-in-codes", apitest.Req{Headers: key}).Map()["code"]
	b := s.Do("POST", "/v1/sign-in-codes", apitest.Req{Headers: key}).Map()["code"]
	if a == b {
		t.Fatalf("a retry replayed the code %v", a)
	}
	var kept int
	if err := s.DB.QueryRow(context.Background(), `SELECT count(*) FROM idempotency_keys`).Scan(&kept); err != nil || kept != 0 {
		t.Fatalf("idempotency_keys holds %d rows (%v), want 0", kept, err)
	}
}
