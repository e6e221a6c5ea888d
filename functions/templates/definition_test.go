package templates

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"horizon/shared/horizon"
	"horizon/shared/problem"
	"horizon/shared/template"
)

// The library's own size limit cannot be reached over HTTP (see
// TestTenMegabyteDefinitionIsTooLarge); this checks that it would be a 413, in both forms.
func TestParseDefinitionOverTheLimitIsTooLarge(t *testing.T) {
	t.Parallel()
	text := "name: big\ndescription: " + strings.Repeat("x", template.MaxSize) + "\n"
	asString, _ := json.Marshal(text)
	asObject, _ := json.Marshal(map[string]any{"name": "big", "description": strings.Repeat("x", template.MaxSize)})
	for name, raw := range map[string][]byte{"string": asString, "object": asObject} {
		var p horizon.Problems
		def, err := parseDefinition(&p, raw)
		pr := problem.From(err)
		if def != nil || pr.Status != 413 || pr.Type != problem.TypeTooLarge || !p.Empty() {
			t.Errorf("%s over the limit: got %v (%+v), want a 413 too-large problem", name, def, pr)
		}
	}
}

func TestParseDefinitionForms(t *testing.T) {
	t.Parallel()
	doc := "name: t\nphases:\n  - name: p\n    jobs:\n      - { name: j, source: { repo: 'file:///r', branch: main } }\n"
	asString, _ := json.Marshal(doc)
	asObject, _ := json.Marshal(map[string]any{"name": "t", "phases": []any{map[string]any{"name": "p",
		"jobs": []any{map[string]any{"name": "j", "source": map[string]any{"repo": "file:///r", "branch": "main"}}}}}})
	var hashes []string
	for name, raw := range map[string]string{"string": string(asString), "object": string(asObject), "padded object": "  " + string(asObject)} {
		var p horizon.Problems
		def, err := parseDefinition(&p, json.RawMessage(raw))
		if err != nil || !p.Empty() || def == nil {
			t.Fatalf("%s: got %v %v %v", name, def, err, p.Err())
		}
		hashes = append(hashes, def.Hash())
	}
	if hashes[0] != hashes[1] || hashes[1] != hashes[2] {
		t.Errorf("the forms hash differently: %v", hashes)
	}
	for name, raw := range map[string]string{"absent": "", "null": "null", "number": "42", "list": "[]", "boolean": "true"} {
		var p horizon.Problems
		def, err := parseDefinition(&p, json.RawMessage(raw))
		var ve *horizon.ValidationError
		if def != nil || err != nil || !errors.As(p.Err(), &ve) || ve.Fields[0].Field != "definition" {
			t.Errorf("%s: got %v %v %v, want a problem on definition", name, def, err, p.Err())
		}
	}
}
