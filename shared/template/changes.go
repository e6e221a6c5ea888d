package template

import (
	"context"
	"fmt"

	"horizon/shared/gitsource"
)

// Pin is what a stack (or a template version, at upload) pinned of a template: the hash of the
// definition and the commit each job's and terraform action's branch pointed to.
type Pin struct {
	Hash          string
	JobCommits    map[string]string
	ActionCommits map[string]string
}

// Changes says whether a template changed since a Pin was taken, and why.
type Changes struct {
	// Changed is DefinitionChanged or any source's Changed.
	Changed bool `json:"changed"`
	// DefinitionChanged: the latest definition's hash is not the pinned one.
	DefinitionChanged bool `json:"definition_changed"`
	// Sources has one entry per job and terraform action of the latest definition, in
	// template order.
	Sources []SourceChange `json:"sources"`
}

// SourceChange compares one source of the latest definition with the pin.
type SourceChange struct {
	// Job or Action names the source.
	Job    string `json:"job,omitempty"`
	Action string `json:"action,omitempty"`
	Repo   string `json:"repo"`
	Branch string `json:"branch"`
	// Pinned is the commit pinned for that name; empty for a job or action the pin did not
	// have (the definition changed too).
	Pinned string `json:"pinned_commit"`
	// Current is the commit the branch points to now; empty when it could not be resolved.
	Current string `json:"current_commit"`
	// Changed: both commits are known and differ.
	Changed bool `json:"changed"`
	// Error says why the branch could not be resolved (the repository or branch is gone, the
	// credentials are refused); such a source is not known to have changed.
	Error string `json:"error,omitempty"`
}

// Compare tells, exactly, whether latest (a template's newest definition) differs from what pin
// recorded: the definition hashes differ, or the branch of some job or terraform action of
// latest now resolves to a commit other than the one pinned under its name. It costs one ref
// listing per distinct repository (gitsource.Cache.ResolveBranches, which also fetches a new
// commit into the cache, as the upgrade that follows will need it) and reads no tree.
//
// What the template's author or an admin can fix (a repository or branch gone, credentials
// refused) is reported in the source's Error; anything else (the context ended, a broken
// cache) is returned as an error.
func Compare(ctx context.Context, latest *Definition, pin Pin, git *gitsource.Cache, creds map[string]gitsource.Credentials) (Changes, error) {
	sources := latest.sources()
	byBranch := resolveBranches(ctx, sources, git, creds)
	ch := Changes{DefinitionChanged: latest.Hash() != pin.Hash, Sources: []SourceChange{}}
	for _, s := range sources {
		r := byBranch[branchKey{s.src.Repo, s.src.Branch}]
		sc := SourceChange{Job: s.job, Action: s.action, Repo: s.src.Repo, Branch: s.src.Branch, Current: r.Commit}
		if s.job != "" {
			sc.Pinned = pin.JobCommits[s.job]
		} else {
			sc.Pinned = pin.ActionCommits[s.action]
		}
		if r.Err != nil {
			if _, ok := sourceField(r.Err); !ok {
				return Changes{}, fmt.Errorf("compare %s: %w", s.path, r.Err)
			}
			sc.Error = r.Err.Error()
		}
		sc.Changed = sc.Pinned != "" && sc.Current != "" && sc.Pinned != sc.Current
		ch.Changed = ch.Changed || sc.Changed
		ch.Sources = append(ch.Sources, sc)
	}
	ch.Changed = ch.Changed || ch.DefinitionChanged
	return ch, nil
}

// Commits returns the commit of each job's and each terraform action's module, as Inspect
// recorded them: what a version pins.
func (m Modules) Commits() (jobs, actions map[string]string) {
	jobs, actions = map[string]string{}, map[string]string{}
	for name, mod := range m.Jobs {
		jobs[name] = mod.Commit
	}
	for name, mod := range m.Actions {
		actions[name] = mod.Commit
	}
	return jobs, actions
}
