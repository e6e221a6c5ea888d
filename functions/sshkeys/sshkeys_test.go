package sshkeys_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"horizon/functions/apitest"
	"horizon/shared/auth"
)

func line(t *testing.T, key any) string {
	t.Helper()
	pub, err := ssh.NewPublicKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pub))) + " ana@laptop"
}

func TestSSHKeys(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, nil)
	_, member := s.NewUser(auth.RoleMember)
	_, other := s.NewUser(auth.RoleMember)
	_, viewer := s.NewUser(auth.RoleViewer)
	edPub, _, _ := ed25519.GenerateKey(rand.Reader)
	weak, _ := rsa.GenerateKey(rand.Reader, 1024)

	r := s.Do("POST", "/v1/ssh-keys", apitest.Req{Token: member, Body: map[string]any{"name": "laptop", "public_key": line(t, edPub)}})
	if r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	key := r.Map()
	pub, _ := ssh.NewPublicKey(edPub)
	if key["fingerprint"] != ssh.FingerprintSHA256(pub) || key["type"] != "ssh-ed25519" {
		t.Fatalf("created %v", key)
	}

	tests := []struct {
		name       string
		token      string
		body       map[string]any
		wantStatus int
	}{
		{"garbage", member, map[string]any{"name": "x", "public_key": "ssh-rsa AAAAnope"}, 422},
		{"1024-bit rsa", member, map[string]any{"name": "x", "public_key": line(t, &weak.PublicKey)}, 422},
		{"same key twice", member, map[string]any{"name": "again", "public_key": line(t, edPub)}, 409},
		{"same name twice", member, map[string]any{"name": "laptop", "public_key": line(t, &mustRSA(t).PublicKey)}, 409},
		{"viewer", viewer, map[string]any{"name": "x", "public_key": line(t, edPub)}, 403},
		{"member for another user", member, map[string]any{"user_id": s.AdminID, "name": "x", "public_key": line(t, edPub)}, 403},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := s.State()
			r := s.Do("POST", "/v1/ssh-keys", apitest.Req{Token: tc.token, Body: tc.body})
			if r.Problem(); r.Status != tc.wantStatus {
				t.Fatalf("got %d %s, want %d", r.Status, r.Body, tc.wantStatus)
			}
			if s.State() != before {
				t.Fatal("the rejected request changed the database")
			}
		})
	}
	id := key["id"].(string)
	if r := s.Do("GET", "/v1/ssh-keys/"+id, apitest.Req{Token: other}); r.Status != 404 {
		t.Fatalf("another user's key: %d, want 404", r.Status)
	}
	if l := s.Do("GET", "/v1/ssh-keys", apitest.Req{Token: other}).Map(); len(l["items"].([]any)) != 0 {
		t.Fatalf("another user lists %v", l)
	}
	if r := s.Do("DELETE", "/v1/ssh-keys/"+id, apitest.Req{Token: other}); r.Status != 404 {
		t.Fatalf("another user deletes: %d, want 404", r.Status)
	}
	if r := s.Do("GET", "/v1/ssh-keys/"+id, apitest.Req{}); r.Status != 200 {
		t.Fatalf("admin reads any key: %d", r.Status)
	}
	if r := s.Do("DELETE", "/v1/ssh-keys/"+id, apitest.Req{Token: member}); r.Status != 204 {
		t.Fatalf("owner deletes: %d", r.Status)
	}
}

func mustRSA(t *testing.T) *rsa.PrivateKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return k
}
