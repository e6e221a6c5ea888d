package gitsource_test

import (
	"context"
	"encoding/pem"
	"errors"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"horizon/shared/gitsource"
	"horizon/shared/secrets"
)

// startHTTPSServer serves the repositories under root with git http-backend over TLS, to
// clients that send token as their basic-auth password. It returns the base URL, a CA file
// that verifies the server, and the request URLs it saw.
func startHTTPSServer(t testing.TB, root, token string) (base, caFile string, seen func() []string) {
	t.Helper()
	execPath, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Fatal(err)
	}
	backend := &cgi.Handler{
		Path: filepath.Join(strings.TrimSpace(string(execPath)), "git-http-backend"),
		Env:  []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"},
	}
	var mu sync.Mutex
	var urls []string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		urls = append(urls, r.URL.String())
		mu.Unlock()
		if _, pass, ok := r.BasicAuth(); !ok || pass != token {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "unauthorised", http.StatusUnauthorized)
			return
		}
		backend.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	caFile = filepath.Join(t.TempDir(), "ca.pem")
	cert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(caFile, cert, 0o644); err != nil {
		t.Fatal(err)
	}
	return srv.URL, caFile, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), urls...)
	}
}

func TestHTTPSToken(t *testing.T) {
	t.Parallel()
	const token = "hzn-test-token-5f1d2c"
	repo := newRepo(t)
	commit := repo.Commit(map[string]string{"main.tf": "# over https\n"})
	base, caFile, seen := startHTTPSServer(t, filepath.Dir(repo.Dir), token)
	repoURL := base + "/" + filepath.Base(repo.Dir)

	for _, tc := range []struct {
		name  string
		url   string
		creds gitsource.Credentials
		want  error
	}{
		{"right token", repoURL, gitsource.Credentials{Token: token}, nil},
		{"wrong token", repoURL, gitsource.Credentials{Token: "wrong-token-value"}, gitsource.ErrAuth},
		{"no token", repoURL, gitsource.Credentials{}, gitsource.ErrAuth},
		{"repository that does not exist", base + "/nope", gitsource.Credentials{Token: token}, gitsource.ErrRepoNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := gitsource.New(gitsource.Config{Dir: cacheDir(t), CAFile: caFile})
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.Resolve(context.Background(), tc.url, "main", tc.creds)
			switch {
			case tc.want == nil && (err != nil || got != commit):
				t.Fatalf("Resolve = %q, %v; want %q", got, err, commit)
			case tc.want != nil && !errors.Is(err, tc.want):
				t.Fatalf("got %v, want %v", err, tc.want)
			case tc.want == nil:
				if _, err := c.Tree(context.Background(), tc.url, commit, tc.creds); err != nil {
					t.Fatalf("Tree: %v", err)
				}
			}
			if err != nil && strings.Contains(err.Error(), tc.creds.Token.Reveal()) && tc.creds.Token != "" {
				t.Fatalf("the error shows the token: %v", err)
			}
		})
	}
	t.Cleanup(func() {
		for _, u := range seen() {
			if strings.Contains(u, token) {
				t.Errorf("the token travelled in a URL: %s", u)
			}
		}
	})
}

func TestHTTPSWithoutTheServersCAIsUnreachable(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	repo.Commit(map[string]string{"a": "a\n"})
	base, _, _ := startHTTPSServer(t, filepath.Dir(repo.Dir), "tok")
	_, err := newCache(t).Resolve(context.Background(), base+"/origin", "main", gitsource.Credentials{Token: secrets.Value("tok")})
	if !errors.Is(err, gitsource.ErrUnreachable) {
		t.Fatalf("got %v, want ErrUnreachable (certificate not trusted)", err)
	}
}

func TestTimeoutIsUnreachable(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() { // accept and never answer
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { _ = conn.Close() })
		}
	}()
	c, err := gitsource.New(gitsource.Config{Dir: cacheDir(t), Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Resolve(context.Background(), "https://"+ln.Addr().String()+"/r.git", "main", gitsource.Credentials{})
	if !errors.Is(err, gitsource.ErrUnreachable) {
		t.Fatalf("got %v, want ErrUnreachable", err)
	}
}
