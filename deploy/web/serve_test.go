package web_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"horizon/deploy/web"
)

// fakeDist is a built console's shape: index.html, a hashed asset, the favicon.
func fakeDist(t *testing.T) string {
	t.Helper()
	dist := t.TempDir()
	for name, body := range map[string]string{
		"index.html":          `<!doctype html><link rel="icon" href="./favicon.svg"><script type="module" src="./assets/index-abc.js"></script>`,
		"assets/index-abc.js": `console.log("horizon")`,
		"favicon.svg":         `<svg xmlns="http://www.w3.org/2000/svg"/>`,
	} {
		p := filepath.Join(dist, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dist
}

// TestHandlerServesFilesWithSecurityHeaders: every answer of the console's origin — pages,
// assets, config.json and refusals — carries the strict CSP (its origin and the API's only),
// denies framing, nosniff and no-referrer; a directory is 404, never a listing.
func TestHandlerServesFilesWithSecurityHeaders(t *testing.T) {
	t.Parallel()
	h, err := web.Handler(fakeDist(t), "http://127.0.0.1:8080/")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	for _, tc := range []struct {
		path, want string
		status     int
	}{
		{"/", "index-abc.js", 200},
		{"/assets/index-abc.js", "horizon", 200},
		{"/favicon.svg", "<svg", 200},
		{"/config.json", `{"apiBaseUrl": "http://127.0.0.1:8080"}`, 200},
		{"/assets/", "", 404},
		{"/assets", "", 404},
		{"/missing.js", "", 404},
		{"/../../etc/passwd", "", 404},
	} {
		t.Run(tc.path, func(t *testing.T) {
			res, err := http.Get(srv.URL + tc.path)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(res.Body)
			_ = res.Body.Close()
			if res.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", res.StatusCode, tc.status, b)
			}
			if tc.status == 200 && !strings.Contains(string(b), tc.want) {
				t.Fatalf("body %q lacks %q", b, tc.want)
			}
			if strings.Contains(string(b), "index-abc.js</a>") {
				t.Fatalf("a directory listing: %s", b)
			}
			h := res.Header
			csp := h.Get("Content-Security-Policy")
			for _, want := range []string{"default-src 'self'", "script-src 'self';", "connect-src 'self' http://127.0.0.1:8080;", "frame-ancestors 'none'", "object-src 'none'", "base-uri 'none'"} {
				if !strings.Contains(csp, want) {
					t.Errorf("Content-Security-Policy %q lacks %q", csp, want)
				}
			}
			if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
				t.Errorf("Content-Security-Policy %q allows inline script or eval", csp)
			}
			for k, want := range map[string]string{"X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"} {
				if got := h.Get(k); got != want {
					t.Errorf("%s: %q, want %q", k, got, want)
				}
			}
		})
	}
	res, err := http.Post(srv.URL+"/", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()
	if res.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST /: %d, want 405", res.StatusCode)
	}
}

// TestConsoleHasAFavicon: the build carries public/favicon.svg and index.html links it, so a
// browser's automatic /favicon.ico guess is not the console's first 404.
func TestConsoleHasAFavicon(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("public/favicon.svg"); err != nil {
		t.Fatal(err)
	}
	index, err := os.ReadFile("index.html")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(index), `rel="icon"`) || !strings.Contains(string(index), "favicon.svg") {
		t.Fatalf("index.html does not link the favicon:\n%s", index)
	}
}
