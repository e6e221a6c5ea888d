package templates_test

import (
	"encoding/pem"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"horizon/functions/apitest"
)

// serveGitOverHTTPS serves the repositories under root with git http-backend over TLS to
// clients that send token as their basic-auth password, and returns its base URL and a CA file
// that verifies it.
func serveGitOverHTTPS(t testing.TB, root, token string) (base, caFile string) {
	t.Helper()
	execPath, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Fatal(err)
	}
	backend := &cgi.Handler{
		Path: filepath.Join(strings.TrimSpace(string(execPath)), "git-http-backend"),
		Env:  []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"},
	}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pass, ok := r.BasicAuth(); !ok || pass != token {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "unauthorised", http.StatusUnauthorized)
			return
		}
		backend.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	caFile = filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	return srv.URL, caFile
}

// TestPrivateRepositoryUsesTheLongestMatchingCredential: a private repository is refused on
// source.repo until a credential covers it, and the longest covering prefix is the one used.
func TestPrivateRepositoryUsesTheLongestMatchingCredential(t *testing.T) {
	t.Parallel()
	const token = "glpat-private-7c41d9e2"
	repo := newSources(t)
	base, caFile := serveGitOverHTTPS(t, filepath.Dir(repo.Dir), token)
	s := apitest.New(t, &apitest.Options{GitCAFile: caFile})
	repoURL := base + "/" + filepath.Base(repo.Dir)
	body := map[string]any{"definition": definition(repoURL)}
	refused := func(why string) {
		t.Helper()
		r := s.Do("POST", "/v1/templates", apitest.Req{Body: body})
		fields := r.Problem().Fields()
		want := []string{"definition.phases[0].jobs[0].source.repo", "definition.phases[1].jobs[0].source.repo"}
		if r.Status != 422 || !reflect.DeepEqual(fields, want) || !strings.Contains(string(r.Body), "authentication failed") {
			t.Fatalf("%s: got %d %s, want 422 on both sources' repo", why, r.Status, r.Body)
		}
		if strings.Contains(string(r.Body), token) {
			t.Fatal("the answer holds the token")
		}
	}
	refused("no credential")

	if r := s.Do("POST", "/v1/git-credentials", apitest.Req{Body: map[string]any{"name": "host", "url_prefix": base, "token": token}}); r.Status != 201 {
		t.Fatalf("register host credential: %d %s", r.Status, r.Body)
	}
	wrong := s.Do("POST", "/v1/git-credentials", apitest.Req{Body: map[string]any{"name": "repo", "url_prefix": repoURL, "token": "an-old-revoked-token"}})
	if wrong.Status != 201 {
		t.Fatalf("register repo credential: %d %s", wrong.Status, wrong.Body)
	}
	refused("the longer prefix's wrong token")

	if r := s.Do("DELETE", "/v1/git-credentials/"+wrong.Map()["id"].(string), apitest.Req{}); r.Status != 204 {
		t.Fatalf("delete: %d", r.Status)
	}
	if r := s.Do("POST", "/v1/templates", apitest.Req{Body: body}); r.Status != 201 {
		t.Fatalf("with the host's credential: %d %s", r.Status, r.Body)
	}
}
