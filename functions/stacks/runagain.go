package stacks

import (
	"context"
	"strconv"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5"

	"horizon/functions/api"
	"horizon/shared/horizon"
	"horizon/shared/problem"
	"horizon/shared/runplan"
	"horizon/shared/store"
)

// RunAgain runs one execution's job again with the same answers (e.g. to refresh a kubeconfig
// output after certificates were renewed outside Horizon): a run of that one step (202).
func RunAgain(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[api.None]) error {
		job := c.Params("job")
		n, err := strconv.Atoi(c.Params("n"))
		if err != nil || n < 0 {
			return problem.Malformed("The execution number in the path must be a non-negative integer.")
		}
		run, err := store.WithTxV(ctx, d.DB, func(ctx context.Context, tx pgx.Tx) (horizon.Run, error) {
			l, err := load(ctx, tx, r.Who.Scope(), r.ID, true)
			if err != nil {
				return horizon.Run{}, err
			}
			if err := notBusy(ctx, tx, l.stack); err != nil {
				return horizon.Run{}, err
			}
			if err := removalPending(l.stack); err != nil {
				return horizon.Run{}, err
			}
			var target *horizon.Execution
			for i := range l.execs {
				if l.execs[i].Job == job && l.execs[i].Index == n {
					target = &l.execs[i]
				}
			}
			if target == nil {
				return horizon.Run{}, problem.NotFound("Execution " + job + "[" + strconv.Itoa(n) + "]")
			}
			if l.stack.State != horizon.StackDeployed && l.stack.State != horizon.StackFailed {
				return horizon.Run{}, problem.Conflict("The stack is %s: run again needs a deployed or failed stack.", l.stack.State)
			}
			if target.AppliedHash == nil {
				return horizon.Run{}, problem.Conflict("%s[%d] has never been applied: retry the stack instead.", job, n)
			}
			steps := runplan.Apply(l.def, []horizon.Execution{*target}, runplan.All)
			return startRun(ctx, tx, l, horizon.RunRunAgain, steps, r.Who)
		})
		if err != nil {
			return err
		}
		return accepted(c, d, run, r.Who)
	})
}
