package template

import (
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"horizon/shared/horizon"
)

// need says which jobs Horizon can give a horizon_* variable to.
type need int

const (
	anyJob     need = iota // every job and terraform action
	machineJob             // machine jobs only
	isoJob                 // machine jobs with iso: true only
)

// horizonVariables are the variables Horizon writes into horizon.auto.tfvars.json for a module
// that declares them (the job contract in deploy/examples/README.md).
var horizonVariables = map[string]need{
	"horizon_name":           anyJob,
	"horizon_tags":           anyJob,
	"horizon_node":           machineJob,
	"horizon_pool":           machineJob,
	"horizon_address":        machineJob,
	"horizon_ssh_public_key": machineJob,
	"horizon_cloud_init":     machineJob,
	"horizon_startup_order":  machineJob,
	"horizon_vmid":           machineJob,
	"horizon_iso":            isoJob,
}

// HorizonVariables returns the names of the variables Horizon provides, sorted.
func HorizonVariables() []string { return sortedKeys(horizonVariables) }

// CheckModules checks a definition (already valid) against its modules and source trees, and
// reports every mismatch at once as a *horizon.ValidationError with document paths:
//
//   - a parameter or an input without a variable of that name in the module, or a parameter
//     whose type the variable's type constraint cannot take;
//   - a required variable that is neither a parameter, an input nor a horizon_* variable Horizon
//     gives that kind of job (machine-only ones to machine jobs, horizon_iso to iso jobs);
//   - a declared variable starting with horizon_ that Horizon does not provide (a typo would
//     otherwise silently receive nothing);
//   - an input referencing an output that the job's module does not declare and the job does not
//     list under outputs (what its scripts emit);
//   - a declared script output with the name of a module output;
//   - a script, cleanup script or script action path that is not a regular file of the job's
//     source directory.
//
// mods holds the module of every job and terraform action; trees holds, for each job, its source
// directory (source.path) at its commit. A job or action whose module (or tree) is missing is
// not checked against it: the caller knows why it is missing, and reports that (Inspect does).
func CheckModules(d *Definition, mods Modules, trees map[string]fs.FS) error {
	var p horizon.Problems
	jobs := d.jobsByName()
	for _, l := range d.located() {
		j, at := l.job, l.path
		mod := mods.Jobs[j.Name]
		if mod == nil {
			continue
		}
		need := anyJob
		if j.Machine {
			need = machineJob
			if j.ISO {
				need = isoJob
			}
		}
		checkVariables(&p, at, mod, j.Parameters, j.Inputs, need)
		checkOutputsOf(&p, at+".inputs", j.Inputs, jobs, mods)
		for i, o := range j.Outputs {
			if mod.Output(o.Name) != nil {
				p.Add(fmt.Sprintf("%s.outputs[%d].name", at, i), "the module already has an output %q; a script output needs a name of its own", o.Name)
			}
		}
		for _, list := range []struct {
			key     string
			scripts []Script
		}{{"scripts", j.Scripts}, {"cleanup", j.Cleanup}} {
			for i, s := range list.scripts {
				if tree := trees[j.Name]; tree != nil {
					checkFile(&p, fmt.Sprintf("%s.%s[%d].path", at, list.key, i), tree, j, s.Path)
				}
			}
		}
	}
	for i, a := range d.Actions {
		at := fmt.Sprintf("actions[%d]", i)
		switch a.Kind {
		case ActionTerraform:
			if mod := mods.Actions[a.Name]; mod != nil {
				checkVariables(&p, at, mod, a.Parameters, a.Inputs, anyJob)
			}
		case ActionScript:
			if j := jobs[a.Job]; j != nil && trees[j.Name] != nil {
				checkFile(&p, at+".path", trees[j.Name], j, a.Path)
			}
		}
		checkOutputsOf(&p, at+".inputs", a.Inputs, jobs, mods)
	}
	return p.Err()
}

func checkVariables(p *horizon.Problems, at string, mod *Module, params Parameters, inputs map[string]string, has need) {
	for i, pm := range params {
		v := mod.Variable(pm.Name)
		if v == nil {
			p.Add(fmt.Sprintf("%s.parameters[%d].name", at, i), "the module declares no variable %q", pm.Name)
			continue
		}
		if why := incompatible(pm.Type, v.Type); why != "" {
			p.Add(fmt.Sprintf("%s.parameters[%d].type", at, i), "variable %q is of type %s: %s", v.Name, v.Type, why)
		}
	}
	for _, name := range sortedKeys(inputs) {
		if mod.Variable(name) == nil {
			p.Add(horizon.JoinPath(at+".inputs", name), "the module declares no variable %q", name)
		}
	}
	for _, v := range mod.Variables {
		n, isHorizon := horizonVariables[v.Name]
		switch {
		case isHorizon && n > has && v.Required:
			p.Add(at+".source", "the module requires %s, which Horizon gives only to %s", v.Name, map[need]string{machineJob: "machine jobs", isoJob: "machine jobs with iso: true"}[n])
		case isHorizon:
		case strings.HasPrefix(v.Name, horizonPrefix):
			p.Add(at+".source", "the module declares %s, which is not a variable Horizon provides (%s)", v.Name, strings.Join(HorizonVariables(), ", "))
		case v.Required && params.byName(v.Name) == nil && inputs[v.Name] == "":
			p.Add(at+".source", "the module requires variable %q: make it a parameter or an input, or give it a default", v.Name)
		}
	}
}

// incompatible says why a parameter of type t cannot feed a variable with type constraint tc, or
// returns "". Terraform converts any primitive to a string, and a numeric string to a number,
// but never a primitive to a collection or structure.
func incompatible(t Type, tc string) string {
	switch tc {
	case "", "any", "string":
		return ""
	case "number":
		if t == TypeInteger || t == TypeNumber {
			return ""
		}
		return "want a parameter of type integer or number"
	case "bool":
		if t == TypeBoolean {
			return ""
		}
		return "want a parameter of type boolean"
	}
	return "a parameter is a single value and cannot fill it"
}

// checkOutputsOf checks that each input references an output its job has.
func checkOutputsOf(p *horizon.Problems, at string, inputs map[string]string, jobs map[string]*Job, mods Modules) {
	for _, name := range sortedKeys(inputs) {
		r, err := ParseReference(inputs[name])
		if err != nil {
			continue // Validate reports it
		}
		src := jobs[r.Job]
		mod := mods.Jobs[r.Job]
		if src == nil || mod == nil {
			continue // an unknown job (Validate) or an uninspected module (reported at that job)
		}
		if mod.Output(r.Output) != nil || slices.ContainsFunc(src.Outputs, func(o ScriptOutput) bool { return o.Name == r.Output }) {
			continue
		}
		p.Add(horizon.JoinPath(at, name), "job %q has no output %q: its module does not declare it and it is not among the job's script outputs", r.Job, r.Output)
	}
}

func checkFile(p *horizon.Problems, at string, tree fs.FS, j *Job, name string) {
	info, err := fs.Stat(tree, name)
	where := j.Source.Path
	if where == "" {
		where = "the repository root"
	}
	switch {
	case err != nil:
		p.Add(at, "%s is not a file of %s at the pinned commit", name, where)
	case !info.Mode().IsRegular():
		p.Add(at, "%s in %s is not a regular file", name, where)
	}
}
