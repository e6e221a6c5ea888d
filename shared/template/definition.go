package template

import "fmt"

// Definition is one template version: ordered phases of jobs, and the actions a deployed stack
// offers. Its JSON form (the struct tags) is the document's form: Parse reads YAML or JSON with
// the same keys, and the API stores the JSON.
type Definition struct {
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	Phases      []Phase  `json:"phases"`
	Actions     []Action `json:"actions,omitempty"`
}

// Phase is a group of jobs that run in parallel; phases run one after another.
type Phase struct {
	Name string `json:"name"`
	Jobs []Job  `json:"jobs"`
}

// Job is one Terraform module, applied once per execution, with optional scripts that run over
// SSH on the machine it builds.
type Job struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Source      Source `json:"source"`
	// Machine: each execution is one VM and needs an address, an SSH key, a node and a pool.
	Machine bool `json:"machine,omitempty"`
	// ISO: each execution needs a built ISO. Only for machine jobs.
	ISO bool `json:"iso,omitempty"`
	// Replace is the order in which a replaced execution is swapped; empty means remove-first.
	Replace    Replace    `json:"replace,omitempty"`
	Executions Executions `json:"executions,omitzero"`
	Parameters Parameters `json:"parameters,omitempty"`
	// Resources is what each of the job's machines uses, for quotas; nil counts one machine
	// and nothing else.
	Resources *Resources `json:"resources,omitempty"`
	// Inputs maps a module variable to a reference to another job's output,
	// "${jobs.<job>.outputs.<output>}".
	Inputs map[string]string `json:"inputs,omitempty"`
	// Outputs declares the outputs the job's scripts emit through $HORIZON_OUTPUT or
	// $HORIZON_SECRET_OUTPUT, so that other jobs can reference them.
	Outputs []ScriptOutput `json:"outputs,omitempty"`
	Scripts []Script       `json:"scripts,omitempty"`
	Cleanup []Script       `json:"cleanup,omitempty"`
	Nagios  []Check        `json:"nagios,omitempty"`
}

// Source is where a job's (or a Terraform action's) module lives: a directory of a branch of a
// git repository.
type Source struct {
	Repo   string `json:"repo"`
	Branch string `json:"branch"`
	// Path is the module's directory, relative to the repository root; empty is the root.
	Path string `json:"path,omitempty"`
}

// Replace says whether a replaced execution is removed before its successor is built.
type Replace string

// The Replace values.
const (
	ReplaceRemoveFirst Replace = "remove-first"
	ReplaceAddFirst    Replace = "add-first"
)

// Executions is how many executions a job has. The zero value is a single execution.
type Executions struct {
	Multiple bool `json:"multiple,omitempty"`
	// Min and Max bound the count of a multiple job; nil means 1 and MaxExecutions.
	Min *int `json:"min,omitempty"`
	Max *int `json:"max,omitempty"`
}

// MaxExecutions is the largest number of executions a job may have.
const MaxExecutions = 100

// Range returns the smallest and the largest number of executions allowed.
func (e Executions) Range() (lo, hi int) {
	if !e.Multiple {
		return 1, 1
	}
	lo, hi = 1, MaxExecutions
	if e.Min != nil {
		lo = *e.Min
	}
	if e.Max != nil {
		hi = *e.Max
	}
	return lo, hi
}

// Script is a file of the job's source directory run over SSH on the machine.
type Script struct {
	Name string `json:"name"`
	// Path is relative to the job's source path.
	Path string `json:"path"`
}

// ScriptOutput declares an output that a job's scripts emit.
type ScriptOutput struct {
	Name        string `json:"name"`
	Secret      bool   `json:"secret,omitempty"`
	Description string `json:"description,omitempty"`
}

// Check is a Nagios service check of a machine: a command the Nagios server defines, and its
// arguments.
type Check struct {
	Command string   `json:"command"`
	Args    []string `json:"args,omitempty"`
}

// ActionKind is what an action runs.
type ActionKind string

// The ActionKind values.
const (
	// ActionTerraform applies a small module of its own; each run leaves an instance that can be
	// undone (destroyed) on its own.
	ActionTerraform ActionKind = "terraform"
	// ActionScript runs a script of a machine job's source on one machine of the job, chosen by
	// the user.
	ActionScript ActionKind = "script"
)

// Action is something a deployed stack offers to run on demand.
type Action struct {
	Name        string     `json:"name"`
	Description string     `json:"description,omitempty"`
	Kind        ActionKind `json:"kind"`
	// Source is the module of a terraform action.
	Source *Source `json:"source,omitempty"`
	// Job and Path name the script of a script action: Path is relative to the job's source path.
	Job  string `json:"job,omitempty"`
	Path string `json:"path,omitempty"`
	// Inputs are pre-filled from the stack's outputs; the user may change them.
	Inputs     map[string]string `json:"inputs,omitempty"`
	Parameters Parameters        `json:"parameters,omitempty"`
	// Outputs declares what a script action emits through $HORIZON_OUTPUT or
	// $HORIZON_SECRET_OUTPUT, as a job's outputs; they are kept with the action's run.
	Outputs []ScriptOutput `json:"outputs,omitempty"`
}

// Jobs returns every job in template order: phase by phase, in the order written.
func (d *Definition) Jobs() []*Job {
	var jobs []*Job
	for pi := range d.Phases {
		for ji := range d.Phases[pi].Jobs {
			jobs = append(jobs, &d.Phases[pi].Jobs[ji])
		}
	}
	return jobs
}

// Job returns the job called name, or nil.
func (d *Definition) Job(name string) *Job {
	for _, j := range d.Jobs() {
		if j.Name == name {
			return j
		}
	}
	return nil
}

// jobsByName indexes the jobs by name (the first, when a name is defined twice), so that
// checks stay linear in the size of the document.
func (d *Definition) jobsByName() map[string]*Job {
	m := map[string]*Job{}
	for _, j := range d.Jobs() {
		if _, dup := m[j.Name]; !dup {
			m[j.Name] = j
		}
	}
	return m
}

// Repos returns the distinct repository URLs of the jobs and terraform actions, in template
// order: the repositories whose credentials Inspect needs.
func (d *Definition) Repos() []string {
	var repos []string
	seen := map[string]bool{}
	for _, s := range d.sources() {
		if !seen[s.src.Repo] {
			seen[s.src.Repo] = true
			repos = append(repos, s.src.Repo)
		}
	}
	return repos
}

// located is a job with its phase index and document path.
type located struct {
	job   *Job
	phase int
	path  string
}

func (d *Definition) located() []located {
	var out []located
	for pi := range d.Phases {
		for ji := range d.Phases[pi].Jobs {
			out = append(out, located{
				job:   &d.Phases[pi].Jobs[ji],
				phase: pi,
				path:  fmt.Sprintf("phases[%d].jobs[%d]", pi, ji),
			})
		}
	}
	return out
}

// sourced is a job's or a terraform action's source, with the document path of the source.
type sourced struct {
	src    Source
	job    string // set for a job
	action string // set for a terraform action
	path   string // e.g. phases[0].jobs[1].source
}

func (d *Definition) sources() []sourced {
	var out []sourced
	for _, l := range d.located() {
		out = append(out, sourced{src: l.job.Source, job: l.job.Name, path: l.path + ".source"})
	}
	for i, a := range d.Actions {
		if a.Kind == ActionTerraform && a.Source != nil {
			out = append(out, sourced{src: *a.Source, action: a.Name, path: fmt.Sprintf("actions[%d].source", i)})
		}
	}
	return out
}
