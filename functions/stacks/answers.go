package stacks

import (
	"encoding/json"
	"fmt"
	"sort"

	"horizon/shared/horizon"
	"horizon/shared/secrets"
	"horizon/shared/template"
)

func execField(job string, i int, field string) string {
	f := fmt.Sprintf("jobs.%s.executions[%d]", job, i)
	if field != "" {
		f += "." + field
	}
	return f
}

// executionsFrom turns a request's jobs into executions of the definition: every job of the
// template gets its executions (a job the request leaves out gets its minimum, unanswered),
// each with its answers and, sealed apart, its secret parameters. Structural mistakes — an
// unknown job or parameter, too many executions, a secret that is not a string — are returned
// as problems; incomplete answers are not (a draft may be incomplete).
func executionsFrom(def *template.Definition, commits map[string]string, jobs map[string]JobRequest, box *secrets.Box) ([]horizon.Execution, *horizon.Problems) {
	p := &horizon.Problems{}
	names := make([]string, 0, len(jobs))
	for name := range jobs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if def.Job(name) == nil {
			p.Add("jobs."+name, "is not a job of this template")
		}
	}
	var out []horizon.Execution
	for _, job := range def.Jobs() {
		reqs := jobs[job.Name].Executions
		lo, hi := job.Executions.Range()
		if _, given := jobs[job.Name]; !given {
			reqs = make([]ExecutionRequest, lo)
		}
		if len(reqs) > hi {
			p.Add("jobs."+job.Name+".executions", "has %d executions; the template allows at most %d", len(reqs), hi)
			continue
		}
		for i, r := range reqs {
			e, ok := executionFrom(job, i, r, box, p)
			if !ok {
				continue
			}
			e.Commit = commits[job.Name]
			out = append(out, e)
		}
	}
	return out, p
}

func executionFrom(job *template.Job, i int, r ExecutionRequest, box *secrets.Box, p *horizon.Problems) (horizon.Execution, bool) {
	ok := true
	cfg := r.config()
	params, secretParams := map[string]any{}, map[string]string{}
	for name, v := range cfg.Parameters {
		param := findParam(job, name)
		switch {
		case param == nil:
			p.Add(execField(job.Name, i, "parameters."+name), "is not a parameter of job %s", job.Name)
			ok = false
		case param.Secret && isSecretMarker(v):
			// {"secret": true}, as GET shows a set secret: sent back, it keeps its value.
		case param.Secret:
			s, isString := v.(string)
			if !isString {
				p.Add(execField(job.Name, i, "parameters."+name), "must be a string")
				ok = false
			} else if s != "" {
				secretParams[name] = s
			}
		case v != nil:
			params[name] = v
		}
	}
	cfg.Parameters = params
	e := horizon.Execution{Job: job.Name, Index: i, Config: cfg, State: horizon.ExecutionActive}
	setSecrets(&e, secretParams, box)
	return e, ok
}

// setSecrets seals an execution's secret parameters and records which have a value.
func setSecrets(e *horizon.Execution, values map[string]string, box *secrets.Box) {
	e.Config.SecretParameterNames = nil
	e.SecretParameters = nil
	if len(values) == 0 {
		return
	}
	for name := range values {
		e.Config.SecretParameterNames = append(e.Config.SecretParameterNames, name)
	}
	sort.Strings(e.Config.SecretParameterNames)
	b, _ := json.Marshal(values) // a map of strings always marshals
	e.SecretParameters = box.Seal(horizon.PurposeSecretParameters, b)
}

// isSecretMarker reports whether v is {"secret": true}, how the API shows a secret that is set.
func isSecretMarker(v any) bool {
	m, ok := v.(map[string]any)
	return ok && len(m) == 1 && m["secret"] == true
}

func findParam(job *template.Job, name string) *template.Parameter {
	for i := range job.Parameters {
		if job.Parameters[i].Name == name {
			return &job.Parameters[i]
		}
	}
	return nil
}
