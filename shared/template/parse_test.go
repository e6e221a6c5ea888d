package template_test

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"

	"horizon/shared/horizon"
	"horizon/shared/template"
)

func readExample(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/kubernetes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func parseExample(t testing.TB) *template.Definition {
	t.Helper()
	d, err := template.Parse(readExample(t))
	if err != nil {
		t.Fatalf("parse testdata/kubernetes.yaml: %v", err)
	}
	return d
}

// fields returns the problems of a *horizon.ValidationError as "field: message" lines.
func fields(t testing.TB, err error) []string {
	t.Helper()
	var ve *horizon.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("got %v (%T), want a *horizon.ValidationError", err, err)
	}
	var out []string
	for _, f := range ve.Fields {
		out = append(out, f.Field+": "+f.Message)
	}
	return out
}

// hasProblem reports whether one of the problems is at field and its message contains msg.
func hasProblem(problems []string, field, msg string) bool {
	for _, p := range problems {
		if strings.HasPrefix(p, field+": ") && strings.Contains(p, msg) {
			return true
		}
	}
	return false
}

func TestParseExample(t *testing.T) {
	t.Parallel()
	d := parseExample(t)
	if got := len(d.Jobs()); got != 3 {
		t.Fatalf("got %d jobs, want 3", got)
	}
	w := d.Job("worker")
	if w == nil || !w.Executions.Multiple || w.Inputs["join_command"] != "${jobs.master.outputs.join_command}" {
		t.Fatalf("worker = %+v", w)
	}
	if lo, hi := w.Executions.Range(); lo != 1 || hi != 50 {
		t.Fatalf("worker executions range = %d..%d, want 1..50", lo, hi)
	}
	if got := d.Job("master").Parameters[0].Default; got != float64(2) {
		t.Fatalf("cores default = %#v, want float64(2)", got)
	}
	if got, want := d.Repos(), []string{"https://git.example.org/infra/k8s.git", "https://git.example.org/infra/db.git"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Repos() = %v, want %v", got, want)
	}
}

func TestParseReportsEveryProblemWithItsPath(t *testing.T) {
	t.Parallel()
	doc := `
name: k8s
phases:
  - name: one
    jobs:
      - name: a
        source: { repo: https://h/r.git, branch: main }
        machine: "yes"
  - name: two
    jobs:
      - name: b
        source: 3
        inputz: { x: y }
        parameters:
          - { name: n, type: integer, default: [1] }
        executions: { multiple: true, min: many }
        nagios: [ { command: check_ssh, args: "-p" } ]
colour: blue
`
	_, err := template.Parse([]byte(doc))
	problems := fields(t, err)
	for _, want := range []struct{ field, msg string }{
		{"phases[0].jobs[0].machine", `want true or false, got the string "yes"`},
		{"phases[1].jobs[0].source", "want an object, got the integer 3"},
		{"phases[1].jobs[0].inputz", "unknown key"},
		{"phases[1].jobs[0].parameters[0].default", "want a string, a number or a boolean, got a list"},
		{"phases[1].jobs[0].executions.min", "want a number"},
		{"phases[1].jobs[0].nagios[0].args", "want a list"},
		{"colour", "unknown key"},
	} {
		if !hasProblem(problems, want.field, want.msg) {
			t.Errorf("missing problem %s: %s\ngot %q", want.field, want.msg, problems)
		}
	}
	// A source of the wrong type is not also reported as missing its repo.
	if hasProblem(problems, "phases[1].jobs[0].source.repo", "") {
		t.Errorf("a wrongly typed source was also reported below: %q", problems)
	}
}

func TestParseValidatesWellFormedDocuments(t *testing.T) {
	t.Parallel()
	_, err := template.Parse([]byte("name: Bad Name\nphases: []\n"))
	problems := fields(t, err)
	if !hasProblem(problems, "name", "lowercase") || !hasProblem(problems, "phases", "at least one phase") {
		t.Fatalf("got %q, want the name and phases problems", problems)
	}
}

func TestParseRejects(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, doc, field, msg string
	}{
		{"empty document", "", "", "empty"},
		{"comment only", "# nothing\n", "", "empty"},
		{"a list", "- a\n- b\n", "", "want a template object, got a list"},
		{"a string", "hello\n", "", "want a template object, got the string"},
		{"JSON array", `[{"name": "x"}]`, "", "want a template object, got a list"},
		{"invalid YAML", "name: [\n", "", "not valid YAML or JSON"},
		{"invalid JSON", `{"name": "x"`, "", "not valid YAML or JSON"},
		{"two documents", "name: a\n---\nname: b\n", "", "single YAML document"},
		{"a document after an empty one", "name: a\n---\n---\nname: b\n", "", "single YAML document"},
		{"duplicate key", "name: a\nname: b\n", "name", "key given twice"},
		{"duplicate JSON key", `{"name": "a", "name": "b"}`, "name", "key given twice"},
		{"non-string key", "1: a\n", "", "keys must be strings"},
		{"merge key", "name: a\n<<: {description: x}\n", "", "keys must be strings"},
		{"custom tag", "name: !shell a\n", "name", "tagged !shell"},
		{"anchor", "name: &n a\ndescription: x\n", "name", "anchors and aliases are not allowed"},
		{"alias", "name: a\ndescription: &d x\nphases:\n  - name: *d\n", "description", "anchors and aliases"},
		{"anchored root", "&root {name: a}\n", "", "anchors and aliases"},
		{"integer for a string", "name: 12\n", "name", "quote it"},
		{"integer with a fraction", "name: a\nphases: [{name: p, jobs: [{name: j, executions: {multiple: true, max: 1.5}}]}]\n", "phases[0].jobs[0].executions.max", "want an integer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d, err := template.Parse([]byte(tc.doc))
			if d != nil {
				t.Fatalf("got a definition %+v, want nil", d)
			}
			if problems := fields(t, err); !hasProblem(problems, tc.field, tc.msg) {
				t.Fatalf("got %q, want a problem at %q containing %q", problems, tc.field, tc.msg)
			}
		})
	}
}

func TestParseAcceptsDocumentMarkers(t *testing.T) {
	t.Parallel()
	body := strings.TrimPrefix(string(readExample(t)), "# A small Kubernetes cluster: one control plane, many workers, and a database for an app.\n")
	for _, doc := range []string{"---\n" + body, body + "---\n", body + "...\n"} {
		if _, err := template.Parse([]byte(doc)); err != nil {
			t.Errorf("Parse(%q…) = %v, want nil", doc[:20], err)
		}
	}
}

func TestParseTooLarge(t *testing.T) {
	t.Parallel()
	doc := "name: a\ndescription: " + strings.Repeat("x", template.MaxSize) + "\n"
	_, err := template.Parse([]byte(doc))
	if !errors.Is(err, template.ErrTooLarge) {
		t.Fatalf("got %v, want ErrTooLarge", err)
	}
	var ve *horizon.ValidationError
	if errors.As(err, &ve) {
		t.Fatal("ErrTooLarge must not be a validation error: the API answers it with 413")
	}
}

func TestParseCapsTheProblems(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("name: a\n")
	for i := range 1000 {
		fmt.Fprintf(&b, "k%d: v\n", i)
	}
	_, err := template.Parse([]byte(b.String()))
	if problems := fields(t, err); len(problems) > 101 || !hasProblem(problems, "", "too many problems") {
		t.Fatalf("got %d problems, want at most 101 ending with 'too many problems'", len(problems))
	}
}

// A billion-laughs document is rejected without expanding its aliases: memory stays bounded by
// the document's size, not by what the aliases would expand to (10^9 strings here).
func TestParseRefusesAnAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("a0: &a0 [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n")
	for i := 1; i <= 9; i++ {
		fmt.Fprintf(&b, "a%d: &a%d [", i, i)
		for j := range 10 {
			if j > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, "*a%d", i-1)
		}
		b.WriteString("]\n")
	}
	fmt.Fprintf(&b, "name: x\nphases:\n  - &p {name: p, jobs: [*a9]}\n")

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := template.Parse([]byte(b.String()))
	runtime.ReadMemStats(&after)

	if problems := fields(t, err); !hasProblem(problems, "phases[0]", "anchors and aliases are not allowed") {
		t.Fatalf("got %q, want the anchor refused at phases[0]", problems)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
		t.Fatalf("parsing allocated %d MiB, want under 16 MiB", grew>>20)
	}
}

func TestParseJSONIsYAML(t *testing.T) {
	t.Parallel()
	yml := parseExample(t)
	js, err := template.Parse([]byte(`{"name": "kubernetes", "description": "Small control plane, big workers", "phases": [
		{"name": "control-plane", "jobs": [{"name": "master", "source": {"repo": "https://git.example.org/infra/k8s.git", "branch": "main", "path": "jobs/master"}, "machine": true}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if js.Phases[0].Jobs[0].Source != yml.Phases[0].Jobs[0].Source {
		t.Fatalf("JSON source %+v, YAML source %+v", js.Phases[0].Jobs[0].Source, yml.Phases[0].Jobs[0].Source)
	}
}
