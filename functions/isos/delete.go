package isos

import (
	"context"
	"fmt"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"horizon/functions/api"
	"horizon/shared/auth"
	"horizon/shared/horizon"
	"horizon/shared/problem"
	"horizon/shared/store"
)

// Delete starts the removal of an ISO (admin) and answers 202 with the ISO: its clones, VM,
// snippets and image are destroyed on Proxmox by a removal run, and the ISO is then removed
// (kept as history). An ISO that any stack not removed uses cannot be deleted: 409 naming the
// stacks, with their ids and names in the problem's stacks member. Refused while a run is in progress (409).
func Delete(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[api.None]) error {
		return startRunOn(c, d, r.Who, r.ID, func(ctx context.Context, tx pgx.Tx, iso horizon.ISO) (launch, error) {
			if iso.State == horizon.ISORemoved {
				return launch{}, problem.Conflict("The ISO was already removed.")
			}
			users, err := store.ISOUsers(ctx, tx, iso.ID)
			if err != nil {
				return launch{}, err
			}
			if len(users) > 0 {
				return launch{}, inUse(iso, users, r.Who)
			}
			return removal(iso), nil
		})
	})
}

// inUse is the 409 of an ISO that stacks use: its detail names the stacks (and their
// machines) the caller may see, its stacks member links them; stacks of teams the caller may
// not see are only counted, neither named nor identified.
func inUse(iso horizon.ISO, users []store.ISOUser, who auth.Principal) *problem.Problem {
	var refs []problem.StackRef
	machines := map[uuid.UUID][]string{}
	hidden := map[uuid.UUID]bool{}
	for _, u := range users {
		if !who.InTeam(u.TeamID) {
			hidden[u.StackID] = true
			continue
		}
		if _, ok := machines[u.StackID]; !ok {
			refs = append(refs, problem.StackRef{ID: u.StackID, Name: u.StackName})
		}
		machines[u.StackID] = append(machines[u.StackID], fmt.Sprintf("%s[%d]", u.Job, u.Index))
	}
	parts := make([]string, 0, len(refs)+1)
	for _, r := range refs {
		parts = append(parts, fmt.Sprintf("stack %s (%s)", r.Name, strings.Join(machines[r.ID], ", ")))
	}
	if n := len(hidden); n > 0 {
		parts = append(parts, fmt.Sprintf("%d stack(s) of other teams", n))
	}
	p := problem.Conflict("ISO %s is used by %s: remove those machines or pick another ISO for them first.", iso.Name, strings.Join(parts, ", "))
	p.Stacks = refs
	return p
}
