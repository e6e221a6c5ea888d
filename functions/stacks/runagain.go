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
		return startRunOn(c, d, r.Who, r.ID, refusesRemoval, func(ctx context.Context, tx pgx.Tx, l *loaded) (launch, error) {
			var target *horizon.Execution
			for i := range l.execs {
				if l.execs[i].Job == job && l.execs[i].Index == n {
					target = &l.execs[i]
				}
			}
			if target == nil {
				return launch{}, problem.NotFound("Execution " + job + "[" + strconv.Itoa(n) + "]")
			}
			if l.stack.State != horizon.StackDeployed && l.stack.State != horizon.StackFailed {
				return launch{}, problem.Conflict("The stack is %s: run again needs a deployed or failed stack.", l.stack.State)
			}
			if target.AppliedHash == nil {
				return launch{}, problem.Conflict("%s[%d] has never been applied: retry the stack instead.", job, n)
			}
			return launch{kind: horizon.RunRunAgain, steps: runplan.Apply(l.def, []horizon.Execution{*target}, runplan.All)}, nil
		})
	})
}
