package app_test

import (
	"context"
	"io"
	"log/slog"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/prometheus/client_golang/prometheus"

	"horizon/functions/api"
	"horizon/functions/app"
	"horizon/openapi"
)

// TestOpenAPIMatchesRoutes proves the document validates and that it describes exactly the
// routes the app registers: no undocumented route, no documented route that does not exist.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	t.Parallel()
	doc, err := openapi3.NewLoader().LoadFromData(openapi.Spec)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("openapi.yaml does not validate: %v", err)
	}

	documented := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			documented[method+" "+path] = true
		}
	}

	a := app.New(api.Deps{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: time.Now},
		app.Options{RequestTimeout: time.Second, RateLimit: 1, RateWindow: time.Second, Registry: prometheus.NewRegistry()})
	param := regexp.MustCompile(`:([a-z_]+)`)
	registered := map[string]bool{}
	for _, r := range a.GetRoutes(true) {
		if r.Method == "HEAD" || r.Method == "USE" || r.Method == "OPTIONS" || r.Path == "/" || strings.HasSuffix(r.Path, "*") {
			continue
		}
		registered[r.Method+" "+param.ReplaceAllString(r.Path, "{$1}")] = true
	}
	for _, missing := range diff(registered, documented) {
		t.Errorf("route %s is registered but not in openapi.yaml", missing)
	}
	for _, extra := range diff(documented, registered) {
		t.Errorf("openapi.yaml documents %s, which is not registered", extra)
	}
}

func diff(a, b map[string]bool) []string {
	var out []string
	for k := range a {
		if !b[k] {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}
