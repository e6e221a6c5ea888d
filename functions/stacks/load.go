package stacks

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"horizon/shared/auth"
	"horizon/shared/horizon"
	"horizon/shared/store"
	"horizon/shared/template"
)

// loaded is a stack with what reading or changing it needs.
type loaded struct {
	stack   horizon.Stack
	version horizon.TemplateVersion
	def     *template.Definition
	execs   []horizon.Execution
}

// load reads a stack the scope may see (locked when forUpdate), its template version and its
// executions.
func load(ctx context.Context, q store.Querier, scope auth.Scope, id uuid.UUID, forUpdate bool) (*loaded, error) {
	get := store.StackGet
	if forUpdate {
		get = store.StackGetForUpdate
	}
	s, err := get(ctx, q, scope, id)
	if err != nil {
		return nil, err
	}
	l := &loaded{stack: s}
	if l.version, l.def, err = version(ctx, q, s.TemplateID, s.TemplateVersion); err != nil {
		return nil, err
	}
	if l.execs, err = store.ExecutionsOfStack(ctx, q, s.ID, false); err != nil {
		return nil, err
	}
	return l, nil
}

// version reads a template version and decodes its definition. A version never changes (a
// trigger refuses updates) nor goes while a stack uses it (ON DELETE RESTRICT), so what was
// read is kept (versions) and read again only by another process. Callers must not change what
// it returns: other requests share it.
func version(ctx context.Context, q store.Querier, templateID uuid.UUID, number int) (horizon.TemplateVersion, *template.Definition, error) {
	key := versionKey{templateID, number}
	if c, ok := versions.get(key); ok {
		return c.v, c.def, nil
	}
	v, err := store.TemplateVersionGet(ctx, q, templateID, number)
	if err != nil {
		return v, nil, err
	}
	def := &template.Definition{}
	if err := json.Unmarshal(v.Definition, def); err != nil {
		return v, nil, fmt.Errorf("decode template %s version %d: %w", templateID, number, err)
	}
	// A transaction may read a row it has not committed yet, which a rollback would take back:
	// only what the pool read, committed, is kept.
	if _, inTx := q.(pgx.Tx); !inTx {
		versions.put(key, cachedVersion{v, def})
	}
	return v, def, nil
}

// maxVersions bounds the versions kept: past it the cache is emptied rather than grown (the
// versions in use come back on their next read).
const maxVersions = 1024

type versionKey struct {
	template uuid.UUID
	number   int
}

type cachedVersion struct {
	v   horizon.TemplateVersion
	def *template.Definition
}

// versionCache holds decoded template versions of this process, by template and number.
type versionCache struct {
	mu      sync.Mutex
	entries map[versionKey]cachedVersion
}

// versions is the process's cache of template versions.
var versions = &versionCache{entries: map[versionKey]cachedVersion{}}

func (c *versionCache) get(k versionKey) (cachedVersion, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.entries[k]
	return v, ok
}

func (c *versionCache) put(k versionKey, v cachedVersion) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= maxVersions {
		clear(c.entries)
	}
	c.entries[k] = v
}

// toStack renders a loaded stack for the API.
func toStack(l *loaded, run *horizon.Run, problems []horizon.FieldError, preselected []string, can horizon.Capabilities) Stack {
	s := l.stack
	out := Stack{ID: s.ID, TeamID: s.TeamID, Name: s.Name, Description: s.Description, Labels: nonNilStrings(s.Labels),
		EnvironmentID: s.EnvironmentID, TemplateID: s.TemplateID, TemplateVersion: s.TemplateVersion, State: string(s.State),
		Jobs: map[string]Job{}, Problems: problems, Preselected: preselected, Version: s.Version, DeployedAt: s.DeployedAt,
		CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt, Drift: noDrift()}
	if out.Problems == nil {
		out.Problems = []horizon.FieldError{}
	}
	if out.Preselected == nil {
		out.Preselected = []string{}
	}
	for _, j := range l.def.Jobs() {
		out.Jobs[j.Name] = Job{Executions: []Execution{}}
	}
	out.ActionCommits = map[string]string{}
	for _, a := range l.def.Actions {
		if c := s.ActionCommit(l.version, a.Name); a.Kind == template.ActionTerraform && c != "" {
			out.ActionCommits[a.Name] = c
		}
	}
	for _, e := range l.execs {
		job := out.Jobs[e.Job]
		job.Executions = append(job.Executions, toExecution(e))
		out.Jobs[e.Job] = job
	}
	inProgress := run != nil && !run.State.Terminal()
	out.AllowedActions = horizon.StackActions(s, inProgress, can)
	if inProgress {
		r := toRun(*run, can)
		out.CurrentRun = &r
	}
	return out
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// capabilities of a principal, for allowed_actions.
func capabilities(p auth.Principal) horizon.Capabilities {
	return horizon.Capabilities{Write: p.CanWrite(), Admin: p.IsAdmin()}
}
