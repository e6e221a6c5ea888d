package template_test

import (
	"encoding/json"
	"strings"
	"testing"

	"horizon/shared/template"
)

func TestHashIgnoresFormattingAndSurvivesJSON(t *testing.T) {
	t.Parallel()
	d := parseExample(t)
	h := d.Hash()
	if !strings.HasPrefix(h, "sha256:") || len(h) != len("sha256:")+64 {
		t.Fatalf("Hash() = %q, want sha256:<64 hex>", h)
	}

	// The same definition written as JSON, with keys in another order.
	js, err := json.MarshalIndent(d, "", "\t")
	if err != nil {
		t.Fatal(err)
	}
	var generic map[string]any
	if err := json.Unmarshal(js, &generic); err != nil {
		t.Fatal(err)
	}
	reordered, _ := json.Marshal(generic) // map keys sorted: another order than the struct's
	fromJSON, err := template.Parse(reordered)
	if err != nil {
		t.Fatal(err)
	}
	if got := fromJSON.Hash(); got != h {
		t.Fatalf("hash of the JSON form = %s, want %s", got, h)
	}

	// Stored as JSON and read back with encoding/json, as the API does.
	var stored template.Definition
	if err := json.Unmarshal(js, &stored); err != nil {
		t.Fatal(err)
	}
	if got := stored.Hash(); got != h {
		t.Fatalf("hash after a JSON round trip = %s, want %s", got, h)
	}

	// Comments and spacing do not count.
	reformatted := strings.ReplaceAll(string(readExample(t)), "\n", "  # note\n")
	if d2, err := template.Parse([]byte(reformatted)); err != nil || d2.Hash() != h {
		t.Fatalf("hash with comments added = %v, %v; want %s", d2, err, h)
	}
}

func TestHashChangesWithContent(t *testing.T) {
	t.Parallel()
	a, b := parseExample(t), parseExample(t)
	b.Phases[0].Jobs[0].Parameters[0].Default = 4.0
	if a.Hash() == b.Hash() {
		t.Fatal("changing a default did not change the hash")
	}
}
