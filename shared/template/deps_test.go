package template_test

import (
	"fmt"
	"testing"

	"horizon/shared/template"
)

// chain: a (phase 0) ← b, c (phase 1) ← d (phase 2, uses b and c) ; e (phase 1) stands alone.
const chain = `
name: chain
phases:
  - name: p0
    jobs:
      - { name: a, source: { repo: "file:///r", branch: main } }
  - name: p1
    jobs:
      - { name: b, source: { repo: "file:///r", branch: main }, inputs: { x: "${jobs.a.outputs.x}" } }
      - { name: c, source: { repo: "file:///r", branch: main }, inputs: { x: "${jobs.a.outputs.x}", y: "${jobs.a.outputs.y}" } }
      - { name: e, source: { repo: "file:///r", branch: main } }
  - name: p2
    jobs:
      - { name: d, source: { repo: "file:///r", branch: main }, inputs: { z: "${jobs.c.outputs.z}", y: "${jobs.b.outputs.y}" } }
`

func TestDependencies(t *testing.T) {
	t.Parallel()
	d, err := template.Parse([]byte(chain))
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(d.Dependencies())
	want := "map[a:[] b:[a] c:[a] d:[b c] e:[]]"
	if got != want {
		t.Fatalf("Dependencies() = %s, want %s", got, want)
	}
}

func TestDependents(t *testing.T) {
	t.Parallel()
	d, err := template.Parse([]byte(chain))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		jobs []string
		want string
	}{
		{[]string{"a"}, "[b c d]"},
		{[]string{"c"}, "[d]"},
		{[]string{"b", "c"}, "[d]"},
		{[]string{"a", "b"}, "[c d]"},
		{[]string{"d"}, "[]"},
		{[]string{"e"}, "[]"},
		{[]string{"nope"}, "[]"},
		{nil, "[]"},
	} {
		if got := fmt.Sprint(d.Dependents(tc.jobs...)); got != tc.want {
			t.Errorf("Dependents(%v) = %s, want %s", tc.jobs, got, tc.want)
		}
	}
}
