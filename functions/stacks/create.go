package stacks

import (
	"context"
	"errors"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"horizon/functions/api"
	"horizon/shared/events"
	"horizon/shared/horizon"
	"horizon/shared/problem"
	"horizon/shared/store"
)

// CreateRequest is the body of POST /v1/stacks.
type CreateRequest struct {
	TeamID          uuid.UUID `json:"team_id"`
	Name            string    `json:"name"`
	Description     string    `json:"description"`
	Labels          []string  `json:"labels"`
	EnvironmentID   uuid.UUID `json:"environment_id"`
	TemplateID      uuid.UUID `json:"template_id"`
	TemplateVersion int       `json:"template_version"`
	Jobs            Jobs      `json:"jobs"`
}

// Create saves a draft: it touches no infrastructure, may be incomplete (GET lists its
// problems), and has the answers that admit a single option preselected.
func Create(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[CreateRequest]) error {
		var p horizon.Problems
		horizon.CheckName(&p, "name", r.Body.Name, horizon.MaxNameLength)
		horizon.CheckText(&p, "description", r.Body.Description, 2000)
		checkLabels(&p, r.Body.Labels)
		if r.Body.TeamID == uuid.Nil {
			p.Add("team_id", "is required")
		} else if !r.Who.InTeam(r.Body.TeamID) {
			p.Add("team_id", "is not one of your teams")
		}
		if r.Body.TemplateVersion < 1 {
			p.Add("template_version", "is required (a version number of the template)")
		}
		if err := p.Err(); err != nil {
			return err
		}
		asked, err := askHostgroups(ctx, d, r.Body.EnvironmentID, r.Body.Jobs)
		if err != nil {
			return err
		}
		var out Stack
		err = store.WithTx(ctx, d.DB, func(ctx context.Context, tx pgx.Tx) error {
			tmpl, err := store.TemplateGet(ctx, tx, r.Body.TemplateID)
			if errors.Is(err, horizon.ErrNotFound) {
				return horizon.Invalid("template_id", "is not a template")
			}
			if err != nil {
				return err
			}
			if !tmpl.Active {
				return horizon.Invalid("template_id", "is not active: it cannot start new stacks")
			}
			tv, def, err := version(ctx, tx, r.Body.TemplateID, r.Body.TemplateVersion)
			if errors.Is(err, horizon.ErrNotFound) {
				return horizon.Invalid("template_version", "is not a version of this template")
			}
			if err != nil {
				return err
			}
			cat, err := loadCatalogue(ctx, tx, r.Body.EnvironmentID, r.Body.TeamID, uuid.Nil)
			if errors.Is(err, horizon.ErrNotFound) {
				return horizon.Invalid("environment_id", "is not an environment")
			}
			if err != nil {
				return err
			}
			execs, pp := executionsFrom(def, tv.JobCommits, r.Body.Jobs, d.Box)
			if err := pp.Err(); err != nil {
				return err
			}
			if err := refuseKeys(ctx, tx, r.Body.TeamID, execs, nil); err != nil {
				return err
			}
			if err := refuseHostgroups(cat, def, execs, nil, asked); err != nil {
				return err
			}
			preselected, err := preselect(ctx, tx, def, execs, cat, r.Who)
			if err != nil {
				return err
			}
			stack, err := store.StackCreate(ctx, tx, horizon.Stack{TeamID: r.Body.TeamID, Name: r.Body.Name, Description: r.Body.Description,
				Labels: r.Body.Labels, EnvironmentID: r.Body.EnvironmentID, TemplateID: r.Body.TemplateID, TemplateVersion: r.Body.TemplateVersion,
				CreatedBy: &r.Who.UserID})
			if err != nil {
				return err
			}
			l := &loaded{stack: stack, version: tv, def: def}
			for _, e := range execs {
				e.StackID = stack.ID
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
			if err := store.ActivityRecord(ctx, tx, store.Activity{ActorID: &r.Who.UserID, Action: "stack.create", ObjectType: "stack",
				ObjectID: &stack.ID, TeamID: &stack.TeamID, Details: map[string]any{"name": stack.Name, "template_id": stack.TemplateID,
					"template_version": stack.TemplateVersion}}); err != nil {
				return err
			}
			out = toStack(l, nil, probs, preselected, capabilities(r.Who))
			return nil
		})
		if err != nil {
			var ce *horizon.ConflictError
			if errors.As(err, &ce) && ce.Constraint == "stacks_name_key" {
				return problem.Conflict("Your team already has a stack named %q.", r.Body.Name)
			}
			return err
		}
		d.Notify(ctx, events.Event{Type: events.Stack, ID: out.ID, StackID: out.ID, TeamID: out.TeamID, State: out.State})
		c.Set(fiber.HeaderETag, api.ETag(out.Version))
		c.Set(fiber.HeaderLocation, "/v1/stacks/"+out.ID.String())
		return c.Status(fiber.StatusCreated).JSON(out)
	})
}
