package stacks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5"

	"horizon/functions/api"
	"horizon/shared/horizon"
	"horizon/shared/problem"
	"horizon/shared/store"
)

// Outputs are a stack's outputs grouped by job, one map per execution. A secret output shows as
// {"secret": true}; its value comes only from reveal.
type Outputs struct {
	Jobs map[string][]ExecutionOutputs `json:"jobs"`
}

// ExecutionOutputs are one execution's outputs.
type ExecutionOutputs struct {
	Execution int            `json:"execution"`
	Outputs   map[string]any `json:"outputs"`
}

// GetOutputs returns the stack's outputs.
func GetOutputs(d api.Deps) fiber.Handler {
	return func(c *fiber.Ctx) error {
		id, err := api.ParamID(c, "id")
		if err != nil {
			return err
		}
		l, err := load(c.UserContext(), d.DB, api.Principal(c).Scope(), id, false)
		if err != nil {
			return err
		}
		out := Outputs{Jobs: map[string][]ExecutionOutputs{}}
		for _, e := range l.execs {
			o := ExecutionOutputs{Execution: e.Index, Outputs: map[string]any{}}
			for k, v := range e.Outputs {
				o.Outputs[k] = v
			}
			names, err := secretOutputNames(d, e)
			if err != nil {
				return err
			}
			for _, k := range names {
				o.Outputs[k] = map[string]any{"secret": true}
			}
			out.Jobs[e.Job] = append(out.Jobs[e.Job], o)
		}
		return c.JSON(out)
	}
}

func secretOutputNames(d api.Deps, e horizon.Execution) ([]string, error) {
	values, err := openSecretOutputs(d, e)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(values))
	for k := range values {
		names = append(names, k)
	}
	return names, nil
}

func openSecretOutputs(d api.Deps, e horizon.Execution) (map[string]string, error) {
	values := map[string]string{}
	if len(e.SecretOutputs) == 0 {
		return values, nil
	}
	b, err := d.Box.Open(horizon.PurposeSecretOutputs, e.SecretOutputs)
	if err != nil {
		return nil, err
	}
	return values, json.Unmarshal(b, &values)
}

// Revealed is one secret output's value.
type Revealed struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Reveal returns one secret output's value (members and admins) and records that it was
// revealed, by whom, in the activity log. It is a POST so that the value is never in a URL
// a proxy or a browser history keeps, and never cached.
func Reveal(d api.Deps) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if err := api.RequireWriter(c); err != nil {
			return err
		}
		id, err := api.ParamID(c, "id")
		if err != nil {
			return err
		}
		job, name := c.Params("job"), c.Params("name")
		n, err := strconv.Atoi(c.Params("n"))
		if err != nil || n < 0 {
			return problem.Malformed("The execution number in the path must be a non-negative integer.")
		}
		who := api.Principal(c)
		var value string
		err = store.WithTx(c.UserContext(), d.DB, func(ctx context.Context, tx pgx.Tx) error {
			l, err := load(ctx, tx, who.Scope(), id, false)
			if err != nil {
				return err
			}
			for _, e := range l.execs {
				if e.Job != job || e.Index != n {
					continue
				}
				values, err := openSecretOutputs(d, e)
				if err != nil {
					return err
				}
				v, ok := values[name]
				if !ok {
					break
				}
				value = v
				return store.ActivityRecord(ctx, tx, store.Activity{ActorID: &who.UserID, Action: "stack.output.reveal", ObjectType: "stack",
					ObjectID: &l.stack.ID, TeamID: &l.stack.TeamID, Details: map[string]any{"job": job, "execution": n, "output": name}})
			}
			return problem.NotFound("Secret output " + name + " of " + job + "[" + strconv.Itoa(n) + "]")
		})
		if err != nil {
			return err
		}
		c.Set(fiber.HeaderCacheControl, "no-store")
		return c.JSON(Revealed{Name: name, Value: value})
	}
}

// RevealActionOutput returns one secret output of an action run (a script action's, or the
// terraform action's whose instance the run made), recorded in the activity log as Reveal's.
func RevealActionOutput(d api.Deps) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if err := api.RequireWriter(c); err != nil {
			return err
		}
		id, err := api.ParamID(c, "id")
		if err != nil {
			return err
		}
		runID, err := api.ParamID(c, "run")
		if err != nil {
			return err
		}
		name := c.Params("name")
		who := api.Principal(c)
		var value string
		err = store.WithTx(c.UserContext(), d.DB, func(ctx context.Context, tx pgx.Tx) error {
			s, err := store.StackGet(ctx, tx, who.Scope(), id)
			if err != nil {
				return err
			}
			a, err := store.ActionRunGet(ctx, tx, runID)
			if err != nil && !errors.Is(err, horizon.ErrNotFound) {
				return err
			}
			var values map[string]string
			if err == nil && a.StackID == s.ID && len(a.SecretOutputs) > 0 {
				b, err := d.Box.Open(horizon.PurposeActionOutputs, a.SecretOutputs)
				if err != nil {
					return fmt.Errorf("open the secret outputs of run %s: %w", runID, err)
				}
				if err := json.Unmarshal(b, &values); err != nil {
					return fmt.Errorf("decode the secret outputs of run %s: %w", runID, err)
				}
			}
			v, ok := values[name]
			if !ok {
				return problem.NotFound("Secret output " + name + " of run " + runID.String())
			}
			value = v
			return store.ActivityRecord(ctx, tx, store.Activity{ActorID: &who.UserID, Action: "stack.output.reveal", ObjectType: "stack",
				ObjectID: &s.ID, TeamID: &s.TeamID, Details: map[string]any{"run_id": runID, "action": a.Action, "output": name}})
		})
		if err != nil {
			return err
		}
		c.Set(fiber.HeaderCacheControl, "no-store")
		return c.JSON(Revealed{Name: name, Value: value})
	}
}
