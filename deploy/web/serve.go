package web

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// SecurityHeaders are the headers every answer of the console's origin carries, whoever serves
// it (`go tool task up`, the tests, or a CDN configured as deploy/README.md says):
//   - a Content-Security-Policy that lets the page load code, styles and images only from its
//     own origin and talk only to its own origin and the API's (apiOrigin): no inline script,
//     no eval, no plugin, no <base> rewrite;
//   - frame-ancestors 'none' and X-Frame-Options DENY (older browsers), so no other site frames
//     the console to click its buttons for the user;
//   - X-Content-Type-Options nosniff, so a file is only ever what its Content-Type says;
//   - Referrer-Policy no-referrer, so a link followed from the console tells nobody which stack
//     page it came from.
//
// img-src allows data: because the console's CSS and favicon may inline small images; nothing
// the page fetches is ever a data: script.
func SecurityHeaders(apiOrigin string) map[string]string {
	return map[string]string{
		"Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
			"font-src 'self'; connect-src 'self' " + apiOrigin + "; object-src 'none'; base-uri 'none'; " +
			"form-action 'self'; frame-ancestors 'none'",
		"X-Frame-Options":        "DENY",
		"X-Content-Type-Options": "nosniff",
		"Referrer-Policy":        "no-referrer",
	}
}

// Handler serves a built console (dist, the output of `npm run build`) as a CDN would, with a
// config.json that points it at apiURL and SecurityHeaders on every answer. It serves files
// only: a directory (such as /assets/) is 404, never a listing, and / is index.html.
func Handler(dist, apiURL string) (http.Handler, error) {
	u, err := url.Parse(apiURL)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("api url %q is not an absolute URL", apiURL)
	}
	headers := SecurityHeaders(u.Scheme + "://" + u.Host)
	files := http.FileServer(http.Dir(dist))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k, v := range headers {
			w.Header().Set(k, v)
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		p := path.Clean("/" + r.URL.Path)
		if p == "/config.json" {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Cache-Control", "no-store")
			fmt.Fprintf(w, `{"apiBaseUrl": %q}`, strings.TrimSuffix(apiURL, "/"))
			return
		}
		if p != "/" {
			// http.FileServer lists a directory without index.html: refuse directories.
			info, err := os.Stat(filepath.Join(dist, filepath.FromSlash(p)))
			if err != nil || info.IsDir() {
				http.NotFound(w, r)
				return
			}
		}
		files.ServeHTTP(w, r)
	}), nil
}
