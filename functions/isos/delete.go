package isos

import (
	"context"
	"fmt"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5"

	"horizon/functions/api"
	"horizon/shared/horizon"
	"horizon/shared/problem"
	"horizon/shared/store"
)

// Delete starts the removal of an ISO (admin) and answers 202 with the ISO: its clones, VM,
// snippets and image are destroyed on Proxmox by a removal run, and the ISO is then removed
// (kept as history). An ISO that any stack not removed uses cannot be deleted: 409 naming the
// stacks. Refused while a run is in progress (409).
func Delete(d api.Deps) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if err := api.RequireAdmin(c); err != nil {
			return err
		}
		id, err := api.ParamID(c, "id")
		if err != nil {
			return err
		}
		who := api.Principal(c)
		var iso horizon.ISO
		var run horizon.Run
		out, err := store.WithTxV(c.UserContext(), d.DB, func(ctx context.Context, tx pgx.Tx) (Detail, error) {
			var err error
			if iso, err = store.ISOGetForUpdate(ctx, tx, id); err != nil {
				return Detail{}, err
			}
			if iso.State == horizon.ISORemoved {
				return Detail{}, problem.Conflict("The ISO was already removed.")
			}
			if err := notBusy(ctx, tx, iso); err != nil {
				return Detail{}, err
			}
			users, err := store.ISOUsers(ctx, tx, iso.ID)
			if err != nil {
				return Detail{}, err
			}
			if len(users) > 0 {
				return Detail{}, problem.Conflict("ISO %s is used by %s: remove those machines or pick another ISO for them first.", iso.Name, describeUsers(users))
			}
			if run, err = startRemoval(ctx, tx, iso, who); err != nil {
				return Detail{}, err
			}
			if iso, err = store.ISOGet(ctx, tx, iso.ID); err != nil {
				return Detail{}, err
			}
			return detail(ctx, tx, iso, who)
		})
		if err != nil {
			return err
		}
		return accepted(c, d, iso, run, out)
	}
}

// describeUsers names the stacks (and their machines) that use an ISO.
func describeUsers(users []store.ISOUser) string {
	var stacks []string
	machines := map[string][]string{}
	for _, u := range users {
		if _, ok := machines[u.StackName]; !ok {
			stacks = append(stacks, u.StackName)
		}
		machines[u.StackName] = append(machines[u.StackName], fmt.Sprintf("%s[%d]", u.Job, u.Index))
	}
	parts := make([]string, len(stacks))
	for i, s := range stacks {
		parts[i] = fmt.Sprintf("stack %s (%s)", s, strings.Join(machines[s], ", "))
	}
	return strings.Join(parts, ", ")
}
