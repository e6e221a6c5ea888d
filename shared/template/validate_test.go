package template_test

import (
	"strings"
	"testing"

	"horizon/shared/template"
)

func ptr[T any](v T) *T { return &v }

func TestValidateExampleIsValid(t *testing.T) {
	t.Parallel()
	if err := parseExample(t).Validate(); err != nil {
		t.Fatalf("got %v, want the example valid", err)
	}
}

// Each case breaks one rule of a valid definition (testdata/kubernetes.yaml) and names the
// problem it must cause. Phase 0 holds master (a machine job with scripts) and db; phase 1
// holds worker.
func TestValidate(t *testing.T) {
	t.Parallel()
	master := func(d *template.Definition) *template.Job { return &d.Phases[0].Jobs[0] }
	db := func(d *template.Definition) *template.Job { return &d.Phases[0].Jobs[1] }
	worker := func(d *template.Definition) *template.Job { return &d.Phases[1].Jobs[0] }
	cores := func(d *template.Definition) *template.Parameter { return &master(d).Parameters[0] }
	pw := func(d *template.Definition) *template.Parameter { return &master(d).Parameters[2] }
	const (
		m  = "phases[0].jobs[0]"
		w  = "phases[1].jobs[0]"
		pc = m + ".parameters[0]"
		pp = m + ".parameters[2]"
	)
	tests := []struct {
		name   string
		break_ func(d *template.Definition)
		field  string
		msg    string
	}{
		// the template
		{"template name required", func(d *template.Definition) { d.Name = "" }, "name", "required"},
		{"template name charset", func(d *template.Definition) { d.Name = "Kube_1" }, "name", "lowercase letters"},
		{"template name ending with -", func(d *template.Definition) { d.Name = "k8s-" }, "name", "not ending with '-'"},
		{"template name too long", func(d *template.Definition) { d.Name = strings.Repeat("a", 64) }, "name", "at most 63"},
		{"description too long", func(d *template.Definition) { d.Description = strings.Repeat("é", 2001) }, "description", "longer than 2000"},
		{"no phase", func(d *template.Definition) { d.Phases = nil }, "phases", "at least one phase"},
		// phases
		{"phase name required", func(d *template.Definition) { d.Phases[1].Name = "" }, "phases[1].name", "required"},
		{"phase name charset", func(d *template.Definition) { d.Phases[1].Name = "Workers" }, "phases[1].name", "lowercase"},
		{"duplicate phase", func(d *template.Definition) { d.Phases[1].Name = "control-plane" }, "phases[1].name", "defined twice"},
		{"phase without jobs", func(d *template.Definition) { d.Phases[1].Jobs = nil }, "phases[1].jobs", "at least one job"},
		// jobs
		{"job name required", func(d *template.Definition) { master(d).Name = "" }, m + ".name", "required"},
		{"job name with _", func(d *template.Definition) { db(d).Name = "my_db" }, "phases[0].jobs[1].name", "lowercase letters, digits and '-'"},
		{"job name too long", func(d *template.Definition) { db(d).Name = strings.Repeat("d", 33) }, "phases[0].jobs[1].name", "at most 32"},
		{"job name reused in another phase", func(d *template.Definition) { worker(d).Name = "db" }, w + ".name", "unique across the template"},
		{"job description too long", func(d *template.Definition) { db(d).Description = strings.Repeat("x", 2001) }, "phases[0].jobs[1].description", "longer"},
		{"repo required", func(d *template.Definition) { master(d).Source.Repo = "" }, m + ".source.repo", "required"},
		{"repo scheme", func(d *template.Definition) { master(d).Source.Repo = "http://git.example.org/k8s.git" }, m + ".source.repo", "scheme must be"},
		{"repo with a password", func(d *template.Definition) { master(d).Source.Repo = "https://u:p@git.example.org/k8s.git" }, m + ".source.repo", "credentials"},
		{"repo as an option", func(d *template.Definition) { master(d).Source.Repo = "--upload-pack=x" }, m + ".source.repo", "'-'"},
		{"branch required", func(d *template.Definition) { master(d).Source.Branch = "" }, m + ".source.branch", "required"},
		{"branch name", func(d *template.Definition) { master(d).Source.Branch = "a..b" }, m + ".source.branch", "invalid branch"},
		{"path leaving the repository", func(d *template.Definition) { master(d).Source.Path = "../other" }, m + ".source.path", "must not leave"},
		{"path leaving further down", func(d *template.Definition) { master(d).Source.Path = "jobs/../../x" }, m + ".source.path", "must not leave"},
		{"absolute path", func(d *template.Definition) { master(d).Source.Path = "/etc" }, m + ".source.path", "relative"},
		{"unclean path", func(d *template.Definition) { master(d).Source.Path = "./jobs//master/" }, m + ".source.path", `write "jobs/master"`},
		{"backslash path", func(d *template.Definition) { master(d).Source.Path = `jobs\master` }, m + ".source.path", "backslashes"},
		{"replace value", func(d *template.Definition) { master(d).Replace = "swap" }, m + ".replace", "want remove-first or add-first"},
		{"iso without machine", func(d *template.Definition) { db(d).ISO = true }, "phases[0].jobs[1].iso", "only a machine job"},
		// executions
		{"min without multiple", func(d *template.Definition) { db(d).Executions.Min = ptr(2) }, "phases[0].jobs[1].executions", "multiple: true"},
		{"min below 0", func(d *template.Definition) { worker(d).Executions.Min = ptr(-1) }, w + ".executions.min", "0 or more"},
		{"max below 1", func(d *template.Definition) { worker(d).Executions.Max = ptr(0) }, w + ".executions.max", "between 1 and 100"},
		{"max above the limit", func(d *template.Definition) { worker(d).Executions.Max = ptr(101) }, w + ".executions.max", "between 1 and 100"},
		{"min above max", func(d *template.Definition) { worker(d).Executions.Min = ptr(10); worker(d).Executions.Max = ptr(5) }, w + ".executions.min", "more than max 5"},
		// parameters
		{"parameter name required", func(d *template.Definition) { cores(d).Name = "" }, pc + ".name", "required"},
		{"parameter name charset", func(d *template.Definition) { cores(d).Name = "CPU-cores" }, pc + ".name", "lowercase letters, digits and '_'"},
		{"parameter name reserved", func(d *template.Definition) { cores(d).Name = "horizon_cores" }, pc + ".name", "reserved"},
		{"duplicate parameter", func(d *template.Definition) { master(d).Parameters[1].Name = "cores" }, m + ".parameters[1].name", "defined twice"},
		{"type required", func(d *template.Definition) { cores(d).Type = "" }, pc + ".type", "required"},
		{"unknown type", func(d *template.Definition) { cores(d).Type = "float" }, pc + ".type", `got "float"`},
		{"secret integer", func(d *template.Definition) { cores(d).Secret = true }, pc + ".secret", "only a string"},
		{"generate without secret", func(d *template.Definition) { pw(d).Secret = false }, pp + ".generate", "only a secret string"},
		{"generate with a pattern", func(d *template.Definition) { pw(d).Pattern = "^a" }, pp + ".generate", "cannot promise"},
		{"generate with an enum", func(d *template.Definition) { pw(d).Enum = []any{"a"} }, pp + ".generate", "cannot promise"},
		{"secret with a default", func(d *template.Definition) { pw(d).Default = "hunter2" }, pp + ".default", "not a secret store"},
		{"pattern on an integer", func(d *template.Definition) { cores(d).Pattern = "^1" }, pc + ".pattern", "only a string"},
		{"pattern that does not compile", func(d *template.Definition) { master(d).Parameters[3].Pattern = "(" }, m + ".parameters[3].pattern", "does not compile"},
		{"bounds on a string", func(d *template.Definition) { master(d).Parameters[3].Minimum = ptr(1.0) }, m + ".parameters[3].minimum", "only a number or an integer"},
		{"fractional bound of an integer", func(d *template.Definition) { cores(d).Maximum = ptr(64.5) }, pc + ".maximum", "must be an integer"},
		{"minimum above maximum", func(d *template.Definition) { cores(d).Minimum = ptr(65.0) }, pc + ".minimum", "more than maximum"},
		{"enum of a boolean", func(d *template.Definition) { db(d).Parameters[1].Enum = []any{true} }, "phases[0].jobs[1].parameters[1].enum", "needs no enum"},
		{"empty enum", func(d *template.Definition) { master(d).Parameters[1].Enum = []any{} }, m + ".parameters[1].enum", "at least one"},
		{"enum member of the wrong type", func(d *template.Definition) { master(d).Parameters[1].Enum = []any{4096.0, "big"} }, m + ".parameters[1].enum[1]", "want a number"},
		{"enum member twice", func(d *template.Definition) { master(d).Parameters[1].Enum = []any{4096.0, 4096} }, m + ".parameters[1].enum[1]", "listed twice"},
		{"enum member out of bounds", func(d *template.Definition) { cores(d).Enum = []any{2.0, 128.0} }, pc + ".enum[1]", "at most 64"},
		{"default of the wrong type", func(d *template.Definition) { cores(d).Default = "two" }, pc + ".default", "want a number"},
		{"default not in the enum", func(d *template.Definition) { master(d).Parameters[1].Default = 1024.0 }, m + ".parameters[1].default", "must be one of [2048,4096,8192]"},
		{"default not matching the pattern", func(d *template.Definition) { master(d).Parameters[3].Default = "Prod" }, m + ".parameters[3].default", "must match"},
		{"default below the minimum", func(d *template.Definition) { cores(d).Default = 0.0 }, pc + ".default", "at least 1"},
		{"default above the maximum", func(d *template.Definition) { cores(d).Default = 65.0 }, pc + ".default", "at most 64"},
		{"fractional default of an integer", func(d *template.Definition) { cores(d).Default = 2.5 }, pc + ".default", "want an integer"},
		{"integer default beyond 2^53", func(d *template.Definition) { cores(d).Maximum = nil; cores(d).Default = 1e16 }, pc + ".default", "want an integer"},
		// inputs
		{"input name charset", func(d *template.Definition) { worker(d).Inputs["Join"] = "${jobs.master.outputs.x}" }, w + ".inputs.Join", "lowercase"},
		{"input that is also a parameter", func(d *template.Definition) { worker(d).Inputs["memory_mb"] = "${jobs.master.outputs.x}" }, w + ".inputs.memory_mb", "also a parameter"},
		{"literal input", func(d *template.Definition) { worker(d).Inputs["join_command"] = "kubeadm join" }, w + ".inputs.join_command", "want a reference"},
		{"reference with text around it", func(d *template.Definition) {
			worker(d).Inputs["join_command"] = "x ${jobs.master.outputs.join_command}"
		}, w + ".inputs.join_command", "want a reference"},
		{"malformed reference", func(d *template.Definition) { worker(d).Inputs["join_command"] = "${jobs.master.join_command}" }, w + ".inputs.join_command", "want a reference"},
		{"reference to an unknown job", func(d *template.Definition) { worker(d).Inputs["join_command"] = "${jobs.mastr.outputs.join_command}" }, w + ".inputs.join_command", `no job is called "mastr"`},
		{"reference to itself", func(d *template.Definition) { worker(d).Inputs["join_command"] = "${jobs.worker.outputs.x}" }, w + ".inputs.join_command", "its own outputs"},
		{"reference within the phase", func(d *template.Definition) { db(d).Inputs = map[string]string{"x": "${jobs.master.outputs.ip}"} }, "phases[0].jobs[1].inputs.x", "earlier phases"},
		// A cycle needs a reference to a job of the same or a later phase, which is refused.
		{"cycle", func(d *template.Definition) { master(d).Inputs = map[string]string{"x": "${jobs.worker.outputs.ip}"} }, m + ".inputs.x", `job "worker" runs in phase "workers"`},
		// script outputs
		{"output name charset", func(d *template.Definition) { master(d).Outputs[0].Name = "join-command" }, m + ".outputs[0].name", "lowercase"},
		{"output declared twice", func(d *template.Definition) { master(d).Outputs = append(master(d).Outputs, master(d).Outputs[0]) }, m + ".outputs[1].name", "declared twice"},
		{"outputs without scripts", func(d *template.Definition) { master(d).Scripts = nil }, m + ".outputs", "has none"},
		// scripts and Nagios
		{"scripts on a non-machine job", func(d *template.Definition) { master(d).Machine = false; master(d).ISO = false }, m + ".scripts", "only a machine job"},
		{"cleanup on a non-machine job", func(d *template.Definition) { db(d).Cleanup = []template.Script{{Name: "c", Path: "c.sh"}} }, "phases[0].jobs[1].cleanup", "only a machine job"},
		{"script name required", func(d *template.Definition) { master(d).Scripts[0].Name = "" }, m + ".scripts[0].name", "required"},
		{"script listed twice", func(d *template.Definition) { master(d).Scripts = append(master(d).Scripts, master(d).Scripts[0]) }, m + ".scripts[1].name", "listed twice"},
		{"script path required", func(d *template.Definition) { master(d).Scripts[0].Path = "" }, m + ".scripts[0].path", "required"},
		{"script path leaving the job", func(d *template.Definition) { master(d).Cleanup[0].Path = "../worker/drain.sh" }, m + ".cleanup[0].path", "must not leave"},
		{"nagios on a non-machine job", func(d *template.Definition) { db(d).Nagios = []template.Check{{Command: "check_ssh"}} }, "phases[0].jobs[1].nagios", "only a machine job"},
		{"nagios command required", func(d *template.Definition) { master(d).Nagios[0].Command = "" }, m + ".nagios[0].command", "required"},
		{"nagios command name", func(d *template.Definition) { master(d).Nagios[0].Command = "check ssh;rm" }, m + ".nagios[0].command", "Nagios command name"},
		{"nagios argument with !", func(d *template.Definition) { master(d).Nagios[1].Args = []string{"-p", "1!2"} }, m + ".nagios[1].args[1]", "'!'"},
		{"nagios argument with a newline", func(d *template.Definition) { master(d).Nagios[1].Args = []string{"-p\nx"} }, m + ".nagios[1].args[0]", "control characters"},
		// actions
		{"action name required", func(d *template.Definition) { d.Actions[0].Name = "" }, "actions[0].name", "required"},
		{"action defined twice", func(d *template.Definition) { d.Actions[1].Name = d.Actions[0].Name }, "actions[1].name", "defined twice"},
		{"action kind required", func(d *template.Definition) { d.Actions[0].Kind = "" }, "actions[0].kind", "required"},
		{"action kind unknown", func(d *template.Definition) { d.Actions[0].Kind = "ansible" }, "actions[0].kind", `got "ansible"`},
		{"terraform action without source", func(d *template.Definition) { d.Actions[0].Source = nil }, "actions[0].source", "needs a source"},
		{"terraform action source checked", func(d *template.Definition) { d.Actions[0].Source.Path = "/abs" }, "actions[0].source.path", "relative"},
		{"terraform action with a job", func(d *template.Definition) { d.Actions[0].Job = "master" }, "actions[0].job", "only a script action"},
		{"terraform action with a path", func(d *template.Definition) { d.Actions[0].Path = "x.sh" }, "actions[0].path", "source path"},
		{"script action with a source", func(d *template.Definition) { d.Actions[1].Source = d.Actions[0].Source }, "actions[1].source", "no source of its own"},
		{"script action without job", func(d *template.Definition) { d.Actions[1].Job = "" }, "actions[1].job", "needs the job"},
		{"script action on an unknown job", func(d *template.Definition) { d.Actions[1].Job = "nope" }, "actions[1].job", `no job is called "nope"`},
		{"script action on a non-machine job", func(d *template.Definition) { d.Actions[1].Job = "db" }, "actions[1].job", "not a machine job"},
		{"script action without path", func(d *template.Definition) { d.Actions[1].Path = "" }, "actions[1].path", "required"},
		{"script action path leaving the job", func(d *template.Definition) { d.Actions[1].Path = "../../x.sh" }, "actions[1].path", "must not leave"},
		{"action input to an unknown job", func(d *template.Definition) { d.Actions[0].Inputs["host"] = "${jobs.nope.outputs.ip}" }, "actions[0].inputs.host", `no job is called "nope"`},
		{"action input malformed", func(d *template.Definition) { d.Actions[0].Inputs["host"] = "db.ip" }, "actions[0].inputs.host", "want a reference"},
		{"action parameter checked", func(d *template.Definition) { d.Actions[0].Parameters[0].Type = "" }, "actions[0].parameters[0].type", "required"},
		{"action description too long", func(d *template.Definition) { d.Actions[0].Description = strings.Repeat("x", 2001) }, "actions[0].description", "longer"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := parseExample(t)
			tc.break_(d)
			problems := fields(t, d.Validate())
			if !hasProblem(problems, tc.field, tc.msg) {
				t.Fatalf("got %q, want a problem at %s containing %q", problems, tc.field, tc.msg)
			}
		})
	}
}

func TestValidateReportsEveryProblemAtOnce(t *testing.T) {
	t.Parallel()
	d := parseExample(t)
	d.Name = ""
	d.Phases[0].Jobs[0].Source.Path = "../x"
	d.Phases[1].Jobs[0].Inputs["join_command"] = "${jobs.nope.outputs.x}"
	d.Actions[1].Job = ""
	problems := fields(t, d.Validate())
	if len(problems) != 4 {
		t.Fatalf("got %d problems %q, want 4", len(problems), problems)
	}
}
