package gitcredentials_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"reflect"
	"sort"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"horizon/functions/apitest"
	"horizon/shared/auth"
	"horizon/shared/gitcred"
)

func newKeys(t *testing.T) (private, encrypted, hostKey, hostFingerprint string) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "deploy")
	if err != nil {
		t.Fatal(err)
	}
	enc, err := ssh.MarshalPrivateKeyWithPassphrase(priv, "deploy", []byte("pass"))
	if err != nil {
		t.Fatal(err)
	}
	hostPub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sshPub, err := ssh.NewPublicKey(hostPub)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(block)), string(pem.EncodeToMemory(enc)),
		strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sshPub))), ssh.FingerprintSHA256(sshPub)
}

func TestGitCredentials(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, nil)
	key, _, hostKey, fingerprint := newKeys(t)
	const token = "glpat-0123456789abcdef"

	h := s.Do("POST", "/v1/git-credentials", apitest.Req{Body: map[string]any{"name": "gitlab", "url_prefix": "https://git.example.org/infra/", "username": "bot", "token": token}})
	if c := h.Map(); h.Status != 201 || c["kind"] != "https" || c["username"] != "bot" || h.Header.Get("Location") != "/v1/git-credentials/"+c["id"].(string) {
		t.Fatalf("https credential: %d %s", h.Status, h.Body)
	}
	sk := s.Do("POST", "/v1/git-credentials", apitest.Req{Body: map[string]any{"name": "gitea", "url_prefix": "ssh://git@git.example.org:2222/",
		"ssh_private_key": key, "ssh_host_key": hostKey + " host comment\n"}})
	c := sk.Map()
	if sk.Status != 201 || c["kind"] != "ssh" || c["ssh_host_key"] != hostKey || !reflect.DeepEqual(c["ssh_host_key_fingerprints"], []any{fingerprint}) {
		t.Fatalf("ssh credential: %d %s", sk.Status, sk.Body)
	}

	l := s.Do("GET", "/v1/git-credentials", apitest.Req{})
	g := s.Do("GET", "/v1/git-credentials/"+c["id"].(string), apitest.Req{})
	for _, r := range []*apitest.Response{h, sk, l, g} {
		if bytes.Contains(r.Body, []byte(token)) || bytes.Contains(r.Body, []byte("PRIVATE KEY")) {
			t.Fatalf("a response holds a secret: %s", r.Body)
		}
	}
	if len(l.Map()["items"].([]any)) != 2 || !reflect.DeepEqual(g.Map(), c) {
		t.Fatalf("list %s / get %s", l.Body, g.Body)
	}

	// At rest the secrets are sealed, and open only for their own column.
	var sealed []byte
	if err := s.DB.QueryRow(context.Background(), `SELECT token FROM git_credentials WHERE name = 'gitlab'`).Scan(&sealed); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte(token)) {
		t.Fatal("the token is stored in clear")
	}
	if v, err := s.Deps.Box.OpenString(gitcred.TokenPurpose, sealed); err != nil || v.Reveal() != token {
		t.Fatalf("open the sealed token: %v", err)
	}
	if _, err := s.Deps.Box.Open(gitcred.SSHKeyPurpose, sealed); err == nil {
		t.Fatal("the token opens under another column's purpose")
	}
	var details string
	if err := s.DB.QueryRow(context.Background(), `SELECT string_agg(details::text, ' ') FROM activity WHERE object_type = 'git_credential'`).Scan(&details); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(details, token) || strings.Contains(details, "PRIVATE") {
		t.Fatalf("the audit trail holds a secret: %s", details)
	}

	if r := s.Do("DELETE", "/v1/git-credentials/"+c["id"].(string), apitest.Req{}); r.Status != 204 {
		t.Fatalf("delete: %d", r.Status)
	}
	if r := s.Do("GET", "/v1/git-credentials/"+c["id"].(string), apitest.Req{}); r.Status != 404 {
		t.Fatalf("get after delete: %d", r.Status)
	}
	if r := s.Do("DELETE", "/v1/git-credentials/"+c["id"].(string), apitest.Req{}); r.Status != 404 {
		t.Fatalf("delete twice: %d", r.Status)
	}
}

func TestCreateGitCredentialRejectsBadInput(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, nil)
	key, encrypted, hostKey, _ := newKeys(t)
	if r := s.Do("POST", "/v1/git-credentials", apitest.Req{Body: map[string]any{"name": "taken", "url_prefix": "https://git.example.org/", "token": "t0ken"}}); r.Status != 201 {
		t.Fatal(r.Status)
	}
	_, member := s.NewUser(auth.RoleMember)
	_, viewer := s.NewUser(auth.RoleViewer)
	https := func(kv ...any) map[string]any {
		m := map[string]any{"name": "x", "url_prefix": "https://git.example.org/infra/", "token": "t0ken"}
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == nil {
				delete(m, kv[i].(string))
			} else {
				m[kv[i].(string)] = kv[i+1]
			}
		}
		return m
	}
	sshReq := func(kv ...any) map[string]any {
		m := map[string]any{"name": "x", "url_prefix": "ssh://git@git.example.org/", "ssh_private_key": key, "ssh_host_key": hostKey}
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == nil {
				delete(m, kv[i].(string))
			} else {
				m[kv[i].(string)] = kv[i+1]
			}
		}
		return m
	}
	tests := []struct {
		name   string
		token  string
		body   map[string]any
		status int
		fields []string
	}{
		{"file prefix", "", https("url_prefix", "file:///srv/git/"), 422, []string{"url_prefix"}},
		{"http prefix", "", https("url_prefix", "http://git.example.org/"), 422, []string{"url_prefix"}},
		{"user in an https prefix", "", https("url_prefix", "https://bot:pw@git.example.org/"), 422, []string{"url_prefix"}},
		{"no host", "", https("url_prefix", "https:///infra/"), 422, []string{"url_prefix"}},
		{"query", "", https("url_prefix", "https://git.example.org/?private=1"), 422, []string{"url_prefix"}},
		{"https without a token", "", https("token", nil), 422, []string{"token"}},
		{"token with a newline", "", https("token", "abc\ndef"), 422, []string{"token"}},
		{"username with a colon", "", https("username", "bot:x"), 422, []string{"username"}},
		{"ssh fields on https", "", https("ssh_private_key", key, "ssh_host_key", hostKey), 422, []string{"ssh_host_key", "ssh_private_key"}},
		{"ssh without a key", "", sshReq("ssh_private_key", nil), 422, []string{"ssh_private_key"}},
		{"ssh key that does not parse", "", sshReq("ssh_private_key", "-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n-----END OPENSSH PRIVATE KEY-----\n"), 422, []string{"ssh_private_key"}},
		{"passphrase-protected key", "", sshReq("ssh_private_key", encrypted), 422, []string{"ssh_private_key"}},
		{"ssh without a host key", "", sshReq("ssh_host_key", nil), 422, []string{"ssh_host_key"}},
		{"host key not a public key", "", sshReq("ssh_host_key", "SHA256:abcdef"), 422, []string{"ssh_host_key"}},
		{"host key with options", "", sshReq("ssh_host_key", `from="10.0.0.1" `+hostKey), 422, []string{"ssh_host_key"}},
		{"a private key as the host key", "", sshReq("ssh_host_key", key), 422, []string{"ssh_host_key"}},
		{"token on ssh", "", sshReq("token", "t0ken", "username", "git"), 422, []string{"token", "username"}},
		{"everything wrong at once", "", map[string]any{"name": "", "url_prefix": "ftp://x/"}, 422, []string{"name", "url_prefix"}},
		{"unknown field", "", https("kind", "https"), 422, []string{"kind"}},
		{"taken name", "", https("name", "taken"), 409, []string{"name"}},
		{"taken prefix", "", https("url_prefix", "https://git.example.org/"), 409, []string{"url_prefix"}},
		{"member", member, https(), 403, nil},
		{"viewer", viewer, https(), 403, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := s.State()
			r := s.Do("POST", "/v1/git-credentials", apitest.Req{Token: tc.token, Body: tc.body})
			fields := r.Problem().Fields()
			sort.Strings(fields)
			if r.Status != tc.status || !reflect.DeepEqual(fields, tc.fields) {
				t.Fatalf("got %d fields %v (%s), want %d fields %v", r.Status, fields, r.Body, tc.status, tc.fields)
			}
			if strings.Contains(string(r.Body), "PRIVATE KEY") || strings.Contains(string(r.Body), "t0ken") {
				t.Fatalf("the problem echoes a secret: %s", r.Body)
			}
			if s.State() != before {
				t.Fatal("the rejected request changed the database")
			}
		})
	}
	for _, tok := range []string{member, viewer} {
		for _, req := range []struct{ method, path string }{{"GET", "/v1/git-credentials"}, {"GET", "/v1/git-credentials/018f0000-0000-7000-8000-000000000000"}, {"DELETE", "/v1/git-credentials/018f0000-0000-7000-8000-000000000000"}} {
			if r := s.Do(req.method, req.path, apitest.Req{Token: tok}); r.Status != 403 {
				t.Errorf("%s %s as a non-admin: %d, want 403", req.method, req.path, r.Status)
			}
		}
	}
}
