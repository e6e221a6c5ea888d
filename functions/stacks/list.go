package stacks

import (
	"context"

	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"horizon/functions/api"
	"horizon/shared/horizon"
	"horizon/shared/problem"
	"horizon/shared/store"
)

// Summary is a stack as lists show it.
type Summary struct {
	ID              string   `json:"id"`
	TeamID          string   `json:"team_id"`
	Name            string   `json:"name"`
	Description     string   `json:"description"`
	Labels          []string `json:"labels"`
	EnvironmentID   string   `json:"environment_id"`
	TemplateID      string   `json:"template_id"`
	TemplateVersion int      `json:"template_version"`
	State           string   `json:"state"`
	AllowedActions  []string `json:"allowed_actions"`
	// Drifted: a drift check found a change on one of its machines that nobody accepted.
	Drifted   bool   `json:"drifted"`
	Version   int64  `json:"version"`
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
}

var stackStates = map[string]bool{"draft": true, "deploying": true, "deployed": true, "updating": true, "failed": true, "removing": true, "removed": true}

// List returns the stacks the caller may see, newest first; filters ?state=, ?label=,
// ?team_id=, ?template_id=, ?environment_id=, ?drifted= (with an unaccepted drift finding or
// without) and ?q= (text in the name or description, or a label).
func List(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[api.None]) error {
		page, err := api.ParsePage(c)
		if err != nil {
			return err
		}
		f := store.StackFilter{State: horizon.StackState(c.Query("state")), Label: c.Query("label"), Text: strings.TrimSpace(c.Query("q"))}
		if len(f.Text) > maxQueryText {
			return problem.Malformed("The query parameter q is longer than %d bytes.", maxQueryText)
		}
		if f.State != "" && !stackStates[string(f.State)] {
			return problem.Malformed("The query parameter state must be a stack state (draft, deploying, deployed, updating, failed, removing, removed).")
		}
		if f.TeamID, err = api.QueryID(c, "team_id"); err != nil {
			return err
		}
		if f.TemplateID, err = api.QueryID(c, "template_id"); err != nil {
			return err
		}
		if f.EnvironmentID, err = api.QueryID(c, "environment_id"); err != nil {
			return err
		}
		if f.Drifted, err = api.QueryBool(c, "drifted"); err != nil {
			return err
		}
		stacks, next, err := store.StackList(ctx, d.DB, r.Who.Scope(), f, page)
		if err != nil {
			return err
		}
		drifted, err := store.DriftedStacks(ctx, d.DB, api.Map(stacks, func(s horizon.Stack) uuid.UUID { return s.ID }))
		if err != nil {
			return err
		}
		can := capabilities(r.Who)
		return c.JSON(api.NewList(api.Map(stacks, func(s horizon.Stack) Summary {
			return Summary{ID: s.ID.String(), TeamID: s.TeamID.String(), Name: s.Name, Description: s.Description, Labels: nonNilStrings(s.Labels),
				EnvironmentID: s.EnvironmentID.String(), TemplateID: s.TemplateID.String(), TemplateVersion: s.TemplateVersion, State: string(s.State),
				AllowedActions: horizon.StackActions(s, s.State.Busy(), can), Drifted: drifted[s.ID], Version: s.Version,
				CreatedAt: s.CreatedAt.UTC().Format(rfc3339), UpdatedAt: s.UpdatedAt.UTC().Format(rfc3339)}
		}), next))
	})
}

// maxQueryText bounds ?q=.
const maxQueryText = 200

const rfc3339 = "2006-01-02T15:04:05.999999999Z07:00"
