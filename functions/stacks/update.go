package stacks

import (
	"context"
	"errors"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"horizon/functions/api"
	"horizon/shared/auth"
	"horizon/shared/events"
	"horizon/shared/horizon"
	"horizon/shared/problem"
	"horizon/shared/queue"
	"horizon/shared/secrets"
	"horizon/shared/store"
)

// UpdateRequest is the body of PATCH /v1/stacks/{id}; absent fields are left as they are, and
// none may be null (jobs: null is jobs left out).
type UpdateRequest struct {
	Name            api.Field[string]    `json:"name"`
	Description     api.Field[string]    `json:"description"`
	Labels          api.Field[[]string]  `json:"labels"`
	EnvironmentID   api.Field[uuid.UUID] `json:"environment_id"`
	TemplateVersion api.Field[int]       `json:"template_version"`
	Jobs            Jobs                 `json:"jobs"`
	// Confirm must be true to save an edit of a deployed or failed stack that runs Terraform
	// (POST /plan shows what it does).
	Confirm bool `json:"confirm"`
}

// Update edits a stack; If-Match is required (428 without it, 412 when stale). A draft can
// change everything (jobs replace its executions). On a deployed or failed stack, name,
// description and labels change at once, without a Terraform run (labels reach the VMs as
// Proxmox tags through the API); an edit of its jobs — or, on a failed stack, confirm alone,
// which finishes what failed — is saved as one re-apply run (202) and needs "confirm": true.
// POST /plan shows what such a save does.
func Update(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[UpdateRequest]) error {
		if r.IfVersion == 0 {
			return problem.New(problem.TypePreconditionRequired, 428, "Send the stack's ETag as If-Match: edits of stacks are never blind.")
		}
		cur, err := load(ctx, d.DB, r.Who.Scope(), r.ID, false)
		if err != nil {
			return err
		}
		if cur.stack.State != horizon.StackDraft && (r.Body.Jobs != nil || !cur.stack.State.Busy() && r.Body.Confirm) {
			return saveEdit(c, d, cur, r.Body, r.IfVersion, nil)
		}
		// A draft's new host groups are asked of Nagios here: the transaction must not wait on it.
		var asked hostgroups
		if cur.stack.State == horizon.StackDraft {
			envID := cur.stack.EnvironmentID
			r.Body.EnvironmentID.Apply(&envID)
			if asked, err = askHostgroups(ctx, d, envID, r.Body.Jobs); err != nil {
				return err
			}
		}
		var out Stack
		err = store.WithTx(ctx, d.DB, func(ctx context.Context, tx pgx.Tx) error {
			l, err := load(ctx, tx, r.Who.Scope(), r.ID, true)
			if err != nil {
				return err
			}
			if l.stack.Version != r.IfVersion {
				return horizon.ErrStale
			}
			if err := notBusy(ctx, tx, l.stack); err != nil {
				return err
			}
			if err := checkFields(l.stack, r.Body); err != nil {
				return err
			}
			draft := l.stack.State == horizon.StackDraft
			if !draft && r.Body.TemplateVersion.Given() && r.Body.TemplateVersion.Value() != l.stack.TemplateVersion {
				return horizon.Invalid("template_version", "changes only through upgrade-template (admins)")
			}
			var preselected []string
			if draft && (r.Body.Jobs != nil || r.Body.TemplateVersion.Given() || r.Body.EnvironmentID.Given()) {
				if preselected, err = replaceDraft(ctx, tx, d, r.Who, l, r.Body, asked); err != nil {
					return err
				}
			}
			s, err := store.StackUpdate(ctx, tx, r.ID, store.StackPatch{Name: r.Body.Name.Ptr(), Description: r.Body.Description.Ptr(), Labels: r.Body.Labels.Ptr(),
				EnvironmentID: r.Body.EnvironmentID.Ptr(), TemplateVersion: r.Body.TemplateVersion.Ptr()}, r.IfVersion)
			if err != nil {
				return err
			}
			if err := store.ActivityRecord(ctx, tx, store.Activity{ActorID: &r.Who.UserID, Action: "stack.update", ObjectType: "stack",
				ObjectID: &s.ID, TeamID: &s.TeamID}); err != nil {
				return err
			}
			out, err = view(ctx, tx, r.Who.Scope(), r.ID, capabilities(r.Who))
			out.Preselected = append(out.Preselected, preselected...)
			return err
		})
		if err != nil {
			return err
		}
		if r.Body.Labels.Given() && cur.stack.DeployedAt != nil {
			// Labels are Proxmox tags on the VMs: written through the API, no Terraform run.
			if err := d.Queue.Enqueue(ctx, queue.NewStackTags(d.Queues, r.ID)); err != nil {
				d.Log.WarnContext(ctx, "enqueue tag update", "stack_id", r.ID, "error", err)
			}
		}
		d.Notify(ctx, events.Event{Type: events.Stack, ID: out.ID, StackID: out.ID, TeamID: out.TeamID, State: out.State})
		c.Set(fiber.HeaderETag, api.ETag(out.Version))
		return c.JSON(out)
	})
}

// checkFields validates the plain fields of an edit.
func checkFields(s horizon.Stack, req UpdateRequest) error {
	var p horizon.Problems
	if req.Name.Given() {
		horizon.CheckName(&p, "name", req.Name.Value(), horizon.MaxNameLength)
	}
	if req.Description.Given() {
		horizon.CheckText(&p, "description", req.Description.Value(), 2000)
	}
	if req.Labels.Given() {
		checkLabels(&p, req.Labels.Value())
	}
	if req.EnvironmentID.Given() && req.EnvironmentID.Value() != s.EnvironmentID && s.DeployedAt != nil {
		p.Add("environment_id", "cannot change once the stack has been deployed")
	}
	return p.Err()
}

// replaceDraft writes a draft's executions anew from the request (or, when only the template
// version or environment moves, from its current answers).
func replaceDraft(ctx context.Context, tx pgx.Tx, d api.Deps, who auth.Principal, l *loaded, req UpdateRequest, asked hostgroups) ([]string, error) {
	number := l.stack.TemplateVersion
	req.TemplateVersion.Apply(&number)
	tv, def, err := version(ctx, tx, l.stack.TemplateID, number)
	if errors.Is(err, horizon.ErrNotFound) {
		return nil, horizon.Invalid("template_version", "is not a version of this template")
	}
	if err != nil {
		return nil, err // the database's failure, not the caller's: never a 4xx
	}
	envID := l.stack.EnvironmentID
	req.EnvironmentID.Apply(&envID)
	cat, err := loadCatalogue(ctx, tx, envID, l.stack.TeamID, l.stack.ID)
	if errors.Is(err, horizon.ErrNotFound) {
		return nil, horizon.Invalid("environment_id", "is not an environment")
	}
	if err != nil {
		return nil, err
	}
	jobs := req.Jobs
	var resolved horizon.Problems
	if jobs == nil {
		jobs = requestOf(l)
	} else {
		jobs = resolveRequests(jobs, l.execs, &resolved)
		if err := resolved.Err(); err != nil {
			return nil, err
		}
	}
	execs, p := executionsFrom(def, tv.JobCommits, jobs, d.Box)
	if err := p.Err(); err != nil {
		return nil, err
	}
	if req.Jobs == nil {
		keepSecrets(l, execs)
	} else {
		keepNamedSecrets(l, jobs, execs, d.Box)
	}
	if err := refuseKeys(ctx, tx, l.stack.TeamID, execs, l.execs); err != nil {
		return nil, err
	}
	if err := refuseHostgroups(cat, def, execs, l.execs, asked); err != nil {
		return nil, err
	}
	preselected, err := preselect(ctx, tx, def, execs, cat, who)
	if err != nil {
		return nil, err
	}
	if err := store.ExecutionDeleteDrafts(ctx, tx, l.stack.ID); err != nil {
		return nil, err
	}
	for _, e := range execs {
		e.StackID = l.stack.ID
		if _, err := store.ExecutionInsert(ctx, tx, e); err != nil {
			return nil, err
		}
	}
	return preselected, nil
}

// requestOf turns a draft's executions back into a request, for a rebuild.
func requestOf(l *loaded) map[string]JobRequest {
	jobs := map[string]JobRequest{}
	for _, e := range l.execs {
		r := ExecutionRequest{base: &e.Config} // every answer left out: all of e's kept
		j := jobs[e.Job]
		j.Executions = append(j.Executions, r)
		jobs[e.Job] = j
	}
	return jobs
}

// keepSecrets carries the sealed secret parameters of a draft's executions over to their
// rebuilt selves (same job and index).
// keepNamedSecrets gives each execution of a draft edit that names an existing one (by id) the
// secret parameters it had, but for those the edit sets anew.
func keepNamedSecrets(l *loaded, jobs map[string]JobRequest, execs []horizon.Execution, box *secrets.Box) {
	byID := map[uuid.UUID]horizon.Execution{}
	for _, e := range l.execs {
		byID[e.ID] = e
	}
	for i := range execs {
		reqs := jobs[execs[i].Job].Executions
		if execs[i].Index >= len(reqs) || reqs[execs[i].Index].ID == nil {
			continue
		}
		old, ok := byID[*reqs[execs[i].Index].ID]
		if !ok {
			continue
		}
		values := openSecrets(box, old.SecretParameters)
		for k, v := range openSecrets(box, execs[i].SecretParameters) {
			values[k] = v
		}
		setSecrets(&execs[i], values, box)
	}
}

func keepSecrets(l *loaded, execs []horizon.Execution) {
	for i := range execs {
		for _, old := range l.execs {
			if old.Job == execs[i].Job && old.Index == execs[i].Index {
				execs[i].SecretParameters = old.SecretParameters
				execs[i].Config.SecretParameterNames = old.Config.SecretParameterNames
			}
		}
	}
}
