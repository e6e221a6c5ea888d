package template

import "sort"

// Dependencies returns, for every job, the jobs its inputs reference, each list in template
// order and without repeats. Every job is a key, with an empty list when it depends on nothing.
// References to unknown jobs are left out (Validate reports them).
func (d *Definition) Dependencies() map[string][]string {
	order := d.order()
	deps := make(map[string][]string, len(order))
	for _, j := range d.Jobs() {
		refs := map[string]bool{}
		for _, v := range j.Inputs {
			if r, err := ParseReference(v); err == nil {
				if _, known := order[r.Job]; known && r.Job != j.Name {
					refs[r.Job] = true
				}
			}
		}
		deps[j.Name] = inOrder(refs, order)
	}
	return deps
}

// Dependents returns the jobs that depend on any of jobs, directly or through other jobs, in
// template order, without the given jobs themselves. Re-applying an edited job re-applies these
// too. Because a job may depend only on jobs of earlier phases, template order is also an
// order in which they can run.
func (d *Definition) Dependents(jobs ...string) []string {
	deps := d.Dependencies()
	affected := map[string]bool{}
	for _, j := range jobs {
		affected[j] = true
	}
	out := map[string]bool{}
	// One pass in template order suffices: a dependent always comes after what it depends on.
	for _, j := range d.Jobs() {
		for _, dep := range deps[j.Name] {
			if affected[dep] && !affected[j.Name] {
				affected[j.Name] = true
				out[j.Name] = true
			}
		}
	}
	return inOrder(out, d.order())
}

// order maps each job name to its position in template order.
func (d *Definition) order() map[string]int {
	order := map[string]int{}
	for i, j := range d.Jobs() {
		if _, dup := order[j.Name]; !dup {
			order[j.Name] = i
		}
	}
	return order
}

// inOrder returns the names in set sorted by their position in template order.
func inOrder(set map[string]bool, order map[string]int) []string {
	out := make([]string, 0, len(set))
	for name := range set {
		out = append(out, name)
	}
	sort.Slice(out, func(i, j int) bool { return order[out[i]] < order[out[j]] })
	return out
}
