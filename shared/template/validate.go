package template

import (
	"fmt"
	"path"
	"regexp"
	"strings"
	"unicode/utf8"

	"horizon/shared/gitsource"
	"horizon/shared/horizon"
)

// Name rules. Job names end up in Terraform workspace names (s<stack>-<job>-<n>), Proxmox VM
// names and hostnames, so they are DNS labels short enough to leave room for the stack's part;
// variable-like names (parameters, inputs, outputs) become Terraform variables and script
// environment variables, so they are lowercase snake case.
var (
	slugRE     = regexp.MustCompile(`^[a-z]([a-z0-9-]*[a-z0-9])?$`)
	variableRE = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	nagiosRE   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)
)

const (
	maxJobName     = 32
	maxName        = 63
	maxDescription = 2000
	maxNagiosArg   = 256
	// horizonPrefix is reserved for the variables Horizon itself provides (HorizonVariables).
	horizonPrefix = "horizon_"
)

// Validate reports every problem of the definition at once, as a *horizon.ValidationError whose
// fields are document paths. It returns nil for a valid definition.
func (d *Definition) Validate() error {
	var p horizon.Problems
	checkSlug(&p, "name", d.Name, maxName)
	checkDescription(&p, "description", d.Description)
	if len(d.Phases) == 0 {
		p.Add("phases", "a template needs at least one phase")
	}
	phaseNames := map[string]bool{}
	for i, ph := range d.Phases {
		at := fmt.Sprintf("phases[%d]", i)
		checkSlug(&p, at+".name", ph.Name, maxName)
		if phaseNames[ph.Name] && ph.Name != "" {
			p.Add(at+".name", "phase %q is defined twice", ph.Name)
		}
		phaseNames[ph.Name] = true
		if len(ph.Jobs) == 0 {
			p.Add(at+".jobs", "a phase needs at least one job")
		}
	}
	jobPhase := map[string]int{}
	for _, l := range d.located() {
		if _, dup := jobPhase[l.job.Name]; dup && l.job.Name != "" {
			p.Add(l.path+".name", "job %q is defined twice (job names are unique across the template)", l.job.Name)
			continue
		}
		jobPhase[l.job.Name] = l.phase
	}
	for _, l := range d.located() {
		d.validateJob(&p, l, jobPhase)
	}
	jobs := d.jobsByName()
	actionNames := map[string]bool{}
	for i := range d.Actions {
		a := &d.Actions[i]
		at := fmt.Sprintf("actions[%d]", i)
		if actionNames[a.Name] && a.Name != "" {
			p.Add(at+".name", "action %q is defined twice", a.Name)
		}
		actionNames[a.Name] = true
		validateAction(&p, a, at, jobs)
	}
	return p.Err()
}

func (d *Definition) validateJob(p *horizon.Problems, l located, jobPhase map[string]int) {
	j, at := l.job, l.path
	checkSlug(p, at+".name", j.Name, maxJobName)
	checkDescription(p, at+".description", j.Description)
	checkSource(p, at+".source", j.Source)
	switch j.Replace {
	case "", ReplaceRemoveFirst, ReplaceAddFirst:
	default:
		p.Add(at+".replace", "want %s or %s, got %q", ReplaceRemoveFirst, ReplaceAddFirst, j.Replace)
	}
	if j.ISO && !j.Machine {
		p.Add(at+".iso", "only a machine job can boot from an ISO")
	}
	checkExecutions(p, at+".executions", j.Executions)
	p.Merge(at+".parameters", j.Parameters.Validate())
	checkResources(p, at+".resources", j)
	checkInputs(p, at+".inputs", j.Inputs, j.Parameters, func(field string, r Reference) {
		switch ph, ok := jobPhase[r.Job]; {
		case !ok:
			p.Add(field, "no job is called %q", r.Job)
		case r.Job == j.Name:
			p.Add(field, "a job cannot use its own outputs")
		case ph >= l.phase:
			p.Add(field, "job %q runs in phase %q, not before this job's phase %q: a job may use only the outputs of jobs of earlier phases", r.Job, d.Phases[ph].Name, d.Phases[l.phase].Name)
		}
	})
	checkScriptOutputs(p, at, j.Outputs)
	if len(j.Outputs) > 0 && len(j.Scripts) == 0 {
		p.Add(at+".outputs", "declared outputs are emitted by scripts, and this job has none")
	}
	for _, list := range []struct {
		key     string
		scripts []Script
	}{{"scripts", j.Scripts}, {"cleanup", j.Cleanup}} {
		if len(list.scripts) > 0 && !j.Machine {
			p.Add(at+"."+list.key, "scripts run over SSH on the job's machine: only a machine job has them")
		}
		names := map[string]bool{}
		for i, s := range list.scripts {
			field := fmt.Sprintf("%s.%s[%d]", at, list.key, i)
			checkSlug(p, field+".name", s.Name, maxName)
			if names[s.Name] && s.Name != "" {
				p.Add(field+".name", "script %q is listed twice", s.Name)
			}
			names[s.Name] = true
			checkRelativePath(p, field+".path", s.Path, true)
		}
	}
	if len(j.Nagios) > 0 && !j.Machine {
		p.Add(at+".nagios", "Nagios checks a machine: only a machine job has checks")
	}
	for i, c := range j.Nagios {
		checkNagios(p, fmt.Sprintf("%s.nagios[%d]", at, i), c)
	}
}

func validateAction(p *horizon.Problems, a *Action, at string, jobs map[string]*Job) {
	checkSlug(p, at+".name", a.Name, maxName)
	checkDescription(p, at+".description", a.Description)
	switch a.Kind {
	case ActionTerraform:
		if a.Source == nil {
			p.Add(at+".source", "a terraform action needs a source")
		} else {
			checkSource(p, at+".source", *a.Source)
		}
		if a.Job != "" {
			p.Add(at+".job", "only a script action runs on a job's machine")
		}
		if a.Path != "" {
			p.Add(at+".path", "a terraform action's module is its source path")
		}
		if len(a.Outputs) > 0 {
			p.Add(at+".outputs", "a terraform action's outputs are its module's: declare them there")
		}
	case ActionScript:
		if a.Source != nil {
			p.Add(at+".source", "a script action runs a script of its job's source; it has no source of its own")
		}
		switch job := jobs[a.Job]; {
		case a.Job == "":
			p.Add(at+".job", "a script action needs the job whose machines run it")
		case job == nil:
			p.Add(at+".job", "no job is called %q", a.Job)
		case !job.Machine:
			p.Add(at+".job", "job %q is not a machine job: a script needs a machine to run on", a.Job)
		}
		checkRelativePath(p, at+".path", a.Path, true)
		checkScriptOutputs(p, at, a.Outputs)
	case "":
		p.Add(at+".kind", "required: %s or %s", ActionTerraform, ActionScript)
	default:
		p.Add(at+".kind", "want %s or %s, got %q", ActionTerraform, ActionScript, a.Kind)
	}
	p.Merge(at+".parameters", a.Parameters.Validate())
	checkInputs(p, at+".inputs", a.Inputs, a.Parameters, func(field string, r Reference) {
		if jobs[r.Job] == nil {
			p.Add(field, "no job is called %q", r.Job)
		}
	})
}

// checkScriptOutputs checks the outputs a job's scripts or a script action declare.
func checkScriptOutputs(p *horizon.Problems, at string, outs []ScriptOutput) {
	outputs := map[string]bool{}
	for i, o := range outs {
		field := fmt.Sprintf("%s.outputs[%d]", at, i)
		checkVariableName(p, field+".name", o.Name)
		if outputs[o.Name] {
			p.Add(field+".name", "output %q is declared twice", o.Name)
		}
		outputs[o.Name] = true
		checkDescription(p, field+".description", o.Description)
	}
}

// checkInputs checks input names and the form of their references, and hands each well-formed
// reference to checkRef.
func checkInputs(p *horizon.Problems, at string, inputs map[string]string, params Parameters, checkRef func(field string, r Reference)) {
	for _, name := range sortedKeys(inputs) {
		field := horizon.JoinPath(at, name)
		checkVariableName(p, field, name)
		if params.byName(name) != nil {
			p.Add(field, "%q is also a parameter: a variable is either asked or wired, not both", name)
		}
		r, err := ParseReference(inputs[name])
		if err != nil {
			p.Add(field, "%v, got %q", err, inputs[name])
			continue
		}
		checkRef(field, r)
	}
}

func checkSource(p *horizon.Problems, at string, s Source) {
	if s.Repo == "" {
		p.Add(at+".repo", "required")
	} else if err := gitsource.CheckURL(s.Repo); err != nil {
		p.Add(at+".repo", "%v", err)
	}
	if s.Branch == "" {
		p.Add(at+".branch", "required")
	} else if err := gitsource.CheckBranch(s.Branch); err != nil {
		p.Add(at+".branch", "%v", err)
	}
	checkRelativePath(p, at+".path", s.Path, false)
}

// checkRelativePath accepts a clean, slash-separated path that stays inside the directory it is
// relative to: no "..", no leading "/", no backslashes, no "." or empty components.
func checkRelativePath(p *horizon.Problems, at, s string, required bool) {
	switch {
	case s == "":
		if required {
			p.Add(at, "required")
		}
	case strings.HasPrefix(s, "/"):
		p.Add(at, "must be relative, not absolute")
	case s == ".." || strings.HasPrefix(s, "../") || strings.Contains(s, "/../") || strings.HasSuffix(s, "/.."):
		p.Add(at, "must not leave its directory (..)")
	case strings.Contains(s, `\`) || strings.ContainsFunc(s, func(r rune) bool { return r < ' ' || r == 0x7f }):
		p.Add(at, "must not contain backslashes or control characters")
	case path.Clean(s) != s || s == ".":
		p.Add(at, "must be a clean path: write %q", path.Clean(s))
	case len(s) > 1024:
		p.Add(at, "longer than 1024 characters")
	}
}

func checkExecutions(p *horizon.Problems, at string, e Executions) {
	if !e.Multiple {
		if e.Min != nil || e.Max != nil {
			p.Add(at, "min and max apply to a job with multiple: true; without it a job has exactly one execution")
		}
		return
	}
	if e.Min != nil && *e.Min < 0 {
		p.Add(at+".min", "must be 0 or more, got %d", *e.Min)
	}
	if e.Max != nil && (*e.Max < 1 || *e.Max > MaxExecutions) {
		p.Add(at+".max", "must be between 1 and %d, got %d", MaxExecutions, *e.Max)
	}
	if lo, hi := e.Range(); lo > hi {
		p.Add(at+".min", "min %d is more than max %d", lo, hi)
	}
}

func checkNagios(p *horizon.Problems, at string, c Check) {
	switch {
	case c.Command == "":
		p.Add(at+".command", "required")
	case len(c.Command) > maxName || !nagiosRE.MatchString(c.Command):
		p.Add(at+".command", "want a Nagios command name (letters, digits, _ . -; at most %d), got %q", maxName, c.Command)
	}
	for i, a := range c.Args {
		// '!' separates a Nagios command's arguments, and a newline would end the object
		// definition Horizon writes.
		if strings.ContainsAny(a, "!\n\r") || strings.ContainsFunc(a, func(r rune) bool { return r < ' ' || r == 0x7f }) || len(a) > maxNagiosArg {
			p.Add(fmt.Sprintf("%s.args[%d]", at, i), "must not contain '!' or control characters, and be at most %d bytes", maxNagiosArg)
		}
	}
}

func checkSlug(p *horizon.Problems, at, s string, max int) {
	switch {
	case s == "":
		p.Add(at, "required")
	case len(s) > max || !slugRE.MatchString(s):
		p.Add(at, "want lowercase letters, digits and '-', starting with a letter, not ending with '-', at most %d characters; got %q", max, s)
	}
}

func checkVariableName(p *horizon.Problems, at, s string) {
	switch {
	case s == "":
		p.Add(at, "required")
	case len(s) > maxName || !variableRE.MatchString(s):
		p.Add(at, "want lowercase letters, digits and '_', starting with a letter, at most %d characters; got %q", maxName, s)
	case strings.HasPrefix(s, horizonPrefix):
		p.Add(at, "names starting with %q are reserved for the variables Horizon provides", horizonPrefix)
	}
}

func checkDescription(p *horizon.Problems, at, s string) {
	if utf8.RuneCountInString(s) > maxDescription {
		p.Add(at, "longer than %d characters", maxDescription)
	}
}
