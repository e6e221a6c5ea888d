package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"horizon/shared/queue"
)

// TestEveryTaskTypeHasAHandler reads shared/queue's Type* constants and checks that the
// workers' handler table covers each, so a new task type cannot ship unserved.
func TestEveryTaskTypeHasAHandler(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob("../shared/queue/*.go")
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range file.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				for i, name := range spec.(*ast.ValueSpec).Names {
					if strings.HasPrefix(name.Name, "Type") {
						lit := spec.(*ast.ValueSpec).Values[i].(*ast.BasicLit)
						types = append(types, strings.Trim(lit.Value, `"`))
					}
				}
			}
		}
	}
	if len(types) == 0 {
		t.Fatal("found no task types")
	}
	hs := handlers(nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	for _, typ := range types {
		if hs[typ] == nil {
			t.Errorf("task type %s has no handler", typ)
		}
	}
	q := queue.Names("x")
	if w := q.Weights(); w[q.Control] == 0 || w[q.Build] == 0 {
		t.Errorf("a queue is not served: %v", w)
	}
}
