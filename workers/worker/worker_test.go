package worker_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryTaskTypeHasAHandler reads shared/queue's Type* constants and checks that the
// worker serves each, so a new task type cannot ship unserved.
func TestEveryTaskTypeHasAHandler(t *testing.T) {
	t.Parallel()
	e := newEngine(t, engineOpts{})
	// The package's directory, from the Go tool rather than a path relative to this one.
	dir, err := exec.Command("go", "list", "-f", "{{.Dir}}", "horizon/shared/queue").Output()
	if err != nil {
		t.Fatalf("locate shared/queue: %v", err)
	}
	files, err := filepath.Glob(filepath.Join(strings.TrimSpace(string(dir)), "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(token.NewFileSet(), f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range file.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if strings.HasPrefix(name.Name, "Type") && i < len(vs.Values) {
						if lit, ok := vs.Values[i].(*ast.BasicLit); ok {
							types = append(types, strings.Trim(lit.Value, `"`))
						}
					}
				}
			}
		}
	}
	if len(types) < 3 {
		t.Fatalf("found task types %v", types)
	}
	for _, typ := range types {
		if !e.worker.Handles(typ) {
			t.Errorf("task type %s has no handler", typ)
		}
	}
}
