package stacks

import (
	"context"
	"errors"
	"fmt"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"horizon/functions/api"
	"horizon/shared/events"
	"horizon/shared/horizon"
	"horizon/shared/problem"
	"horizon/shared/store"
	"horizon/shared/template"
)

// DuplicateRequest is the optional body of POST /v1/stacks/{id}/duplicate.
type DuplicateRequest struct {
	api.Optional // the body may be left out
	// Name of the new draft; default "<name>-copy" (or "-copy-2", … when taken).
	Name *string `json:"name"`
	// TeamID of the new draft; default the original's. It must be one of the caller's teams.
	TeamID *uuid.UUID `json:"team_id"`
}

// Duplicate opens a new draft from a stack: the same template version, environment, labels
// and answers (parameters, server, node, pool, SSH key, ISO, monitoring, startup order), with
// what cannot be shared left empty — addresses, and secrets the template generates (the new
// stack generates its own). The copy keeps the original's pinned commits, so both build the
// same code. Preselection runs again (a single free address is filled in).
func Duplicate(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[DuplicateRequest]) error {
		var p horizon.Problems
		if r.Body.Name != nil {
			horizon.CheckName(&p, "name", *r.Body.Name, horizon.MaxNameLength)
		}
		if r.Body.TeamID != nil && !r.Who.InTeam(*r.Body.TeamID) {
			p.Add("team_id", "is not one of your teams")
		}
		if err := p.Err(); err != nil {
			return err
		}
		var out Stack
		err := store.WithTx(ctx, d.DB, func(ctx context.Context, tx pgx.Tx) error {
			src, err := load(ctx, tx, r.Who.Scope(), r.ID, false)
			if err != nil {
				return err
			}
			if src.stack.State == horizon.StackRemoved {
				return problem.Conflict("The stack is removed: its answers are kept only in its activity record.")
			}
			team := src.stack.TeamID
			if r.Body.TeamID != nil {
				team = *r.Body.TeamID
			}
			name, err := copyName(ctx, tx, team, src.stack.Name, r.Body.Name)
			if err != nil {
				return err
			}
			stack, err := store.StackCreate(ctx, tx, horizon.Stack{TeamID: team, Name: name, Description: src.stack.Description,
				Labels: src.stack.Labels, EnvironmentID: src.stack.EnvironmentID, TemplateID: src.stack.TemplateID,
				TemplateVersion: src.stack.TemplateVersion, CreatedBy: &r.Who.UserID, ActionCommits: src.stack.ActionCommits})
			if err != nil {
				return err
			}
			var execs []horizon.Execution
			var notCopied []horizon.FieldError
			for _, e := range src.execs {
				if job := src.def.Job(e.Job); job != nil {
					ex, left := duplicateExecution(d, job, stack.ID, e)
					execs = append(execs, ex)
					notCopied = append(notCopied, left...)
				}
			}
			cat, err := loadCatalogue(ctx, tx, stack.EnvironmentID, stack.TeamID, stack.ID)
			if err != nil {
				return err
			}
			preselected, err := preselect(ctx, tx, src.def, execs, cat, r.Who)
			if err != nil {
				return err
			}
			l := &loaded{stack: stack, version: src.version, def: src.def}
			for _, e := range execs {
				saved, err := store.ExecutionInsert(ctx, tx, e)
				if err != nil {
					return err
				}
				l.execs = append(l.execs, saved)
			}
			probs, err := deployProblems(ctx, tx, l, cat)
			if err != nil {
				return err
			}
			if err := store.ActivityRecord(ctx, tx, store.Activity{ActorID: &r.Who.UserID, Action: "stack.duplicate", ObjectType: "stack",
				ObjectID: &stack.ID, TeamID: &stack.TeamID, Details: map[string]any{"from": src.stack.ID, "name": stack.Name}}); err != nil {
				return err
			}
			out = toStack(l, nil, probs, preselected, capabilities(r.Who))
			out.NotCopied = notCopied
			return nil
		})
		if err != nil {
			return err
		}
		d.Notify(ctx, events.Event{Type: events.Stack, ID: out.ID, StackID: out.ID, TeamID: out.TeamID, State: out.State})
		c.Set(fiber.HeaderETag, api.ETag(out.Version))
		c.Set(fiber.HeaderLocation, "/v1/stacks/"+out.ID.String())
		return c.Status(fiber.StatusCreated).JSON(out)
	})
}

// duplicateExecution copies an execution's answers into a draft execution of stack: no
// address, no placement, no outputs, and no value for secrets the template generates. It also
// returns what it left out that the original had, by field (a duplicate's not_copied).
func duplicateExecution(d api.Deps, job *template.Job, stack uuid.UUID, e horizon.Execution) (horizon.Execution, []horizon.FieldError) {
	var left []horizon.FieldError
	at := fmt.Sprintf("jobs.%s.executions[%d].", e.Job, e.Index)
	cfg := e.Config
	if cfg.AddressID != nil {
		left = append(left, horizon.FieldError{Field: at + "address_id", Message: "an address belongs to one stack: pick a free one"})
	}
	cfg.AddressID = nil
	params := make(map[string]any, len(cfg.Parameters))
	for k, v := range cfg.Parameters {
		params[k] = v
	}
	cfg.Parameters = params
	out := horizon.Execution{StackID: stack, Job: e.Job, Index: e.Index, Config: cfg, Commit: e.Commit, State: horizon.ExecutionActive}
	secrets := openSecrets(d.Box, e.SecretParameters)
	for _, pm := range job.Parameters {
		if _, had := secrets[pm.Name]; pm.Generate && had {
			delete(secrets, pm.Name)
			left = append(left, horizon.FieldError{Field: at + "parameters." + pm.Name, Message: "a generated secret: the new stack generates its own"})
		}
	}
	setSecrets(&out, secrets, d.Box)
	return out, left
}

// copyName is the requested name (409 when the team has it) or the first free
// "<name>-copy", "<name>-copy-2", … within the team.
func copyName(ctx context.Context, q store.Querier, team uuid.UUID, original string, requested *string) (string, error) {
	if requested != nil {
		taken, err := store.StackNameTaken(ctx, q, team, *requested)
		if err != nil {
			return "", err
		}
		if taken {
			return "", problem.Conflict("Your team already has a stack named %q.", *requested)
		}
		return *requested, nil
	}
	for n := 1; n < 1000; n++ {
		suffix := "-copy"
		if n > 1 {
			suffix = fmt.Sprintf("-copy-%d", n)
		}
		base := []rune(original)
		if len(base)+len(suffix) > horizon.MaxNameLength {
			base = base[:horizon.MaxNameLength-len(suffix)]
		}
		name := string(base) + suffix
		taken, err := store.StackNameTaken(ctx, q, team, name)
		if err != nil {
			return "", err
		}
		if !taken {
			return name, nil
		}
	}
	return "", errors.New("no free copy name")
}
