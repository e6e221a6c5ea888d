package template_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"horizon/shared/horizon"
	"horizon/shared/template"
)

// FuzzParse feeds Parse any document. Its properties: an error is either ErrTooLarge or a
// *horizon.ValidationError (what the API turns into a 413 or a 422 naming the fields), never
// anything else; a document holding a YAML anchor or alias is never accepted; and an accepted
// definition is a fixed point: marshalled (as it is stored, JSONB) and parsed again, it parses
// to the same definition.
//
// The seeds are the repository's templates (shared/template/testdata, deploy/examples) and the
// shapes an attacker would try first (an alias bomb, deep nesting, a document of only anchors).
func FuzzParse(f *testing.F) {
	for _, pattern := range []string{"testdata/*.yaml", "../../deploy/examples/*/template.yaml"} {
		paths, err := filepath.Glob(pattern)
		if err != nil {
			f.Fatal(err)
		}
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	f.Add([]byte("a: &a [x, x]\nb: &b [*a, *a]\nc: &c [*b, *b]\nname: n\nphases: [*c]\n"))
	f.Add([]byte("name: n\nphases: " + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + "\n"))
	f.Add([]byte(`{"name":"n","phases":[{"name":"p","jobs":[{"name":"j","source":{"repo":"https://g/r.git","branch":"main","path":"m"}}]}]}`))
	f.Add([]byte("&r {name: a}\n"))
	f.Add([]byte("name: a\n---\nname: b\n"))

	f.Fuzz(func(t *testing.T, doc []byte) {
		def, err := template.Parse(doc)
		if err != nil {
			var ve *horizon.ValidationError
			if !errors.Is(err, template.ErrTooLarge) && !errors.As(err, &ve) {
				t.Fatalf("Parse returned %T %v, want ErrTooLarge or a *horizon.ValidationError", err, err)
			}
			return
		}
		if hasAnchor(doc) {
			t.Fatalf("Parse accepted a document with a YAML anchor or alias:\n%s", doc)
		}
		stored, err := json.Marshal(def)
		if err != nil {
			t.Fatalf("marshal an accepted definition: %v", err)
		}
		again, err := template.Parse(stored)
		if err != nil {
			t.Fatalf("the stored form of an accepted definition does not parse: %v\nstored: %s", err, stored)
		}
		restored, err := json.Marshal(again)
		if err != nil {
			t.Fatal(err)
		}
		if string(restored) != string(stored) {
			t.Fatalf("parse → marshal → parse is not stable:\nfirst:  %s\nsecond: %s", stored, restored)
		}
	})
}

// hasAnchor reports whether doc, read as YAML, holds an anchor or an alias anywhere. It reads
// nodes only: yaml.v3 expands aliases when decoding into values, never into a Node tree.
func hasAnchor(doc []byte) bool {
	var n yaml.Node
	if err := yaml.Unmarshal(doc, &n); err != nil {
		return false
	}
	var walk func(*yaml.Node) bool
	walk = func(n *yaml.Node) bool {
		if n.Anchor != "" || n.Kind == yaml.AliasNode {
			return true
		}
		for _, c := range n.Content {
			if walk(c) {
				return true
			}
		}
		return false
	}
	return walk(&n)
}
