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
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[api.None]) error {
		l, err := load(ctx, d.DB, r.Who.Scope(), r.ID, false)
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
	})
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
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[api.None]) error {
		job, name := c.Params("job"), c.Params("name")
		n, err := strconv.Atoi(c.Params("n"))
		if err != nil || n < 0 {
			return problem.Malformed("The execution number in the path must be a non-negative integer.")
		}
		var value string
		err = store.WithTx(ctx, d.DB, func(ctx context.Context, tx pgx.Tx) error {
			l, err := load(ctx, tx, r.Who.Scope(), r.ID, false)
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
				return store.ActivityRecord(ctx, tx, store.Activity{ActorID: &r.Who.UserID, Action: "stack.output.reveal", ObjectType: "stack",
					ObjectID: &l.stack.ID, TeamID: &l.stack.TeamID, Details: map[string]any{"job": job, "execution": n, "output": name}})
			}
			return problem.NotFound("Secret output " + name + " of " + job + "[" + strconv.Itoa(n) + "]")
		})
		if err != nil {
			return err
		}
		c.Set(fiber.HeaderCacheControl, "no-store")
		return c.JSON(Revealed{Name: name, Value: value})
	})
}

// RevealActionOutput returns one secret output of an action run (a script action's, or the
// terraform action's whose instance the run made), recorded in the activity log as Reveal's.
func RevealActionOutput(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[api.None]) error {
		name := c.Params("name")
		var value string
		err := store.WithTx(ctx, d.DB, func(ctx context.Context, tx pgx.Tx) error {
			s, err := store.StackGet(ctx, tx, r.Who.Scope(), r.ID)
			if err != nil {
				return err
			}
			a, err := store.ActionRunGet(ctx, tx, r.Sub)
			if err != nil && !errors.Is(err, horizon.ErrNotFound) {
				return err
			}
			var values map[string]string
			if err == nil && a.StackID == s.ID && len(a.SecretOutputs) > 0 {
				b, err := d.Box.Open(horizon.PurposeActionOutputs, a.SecretOutputs)
				if err != nil {
					return fmt.Errorf("open the secret outputs of run %s: %w", r.Sub, err)
				}
				if err := json.Unmarshal(b, &values); err != nil {
					return fmt.Errorf("decode the secret outputs of run %s: %w", r.Sub, err)
				}
			}
			v, ok := values[name]
			if !ok {
				return problem.NotFound("Secret output " + name + " of run " + r.Sub.String())
			}
			value = v
			return store.ActivityRecord(ctx, tx, store.Activity{ActorID: &r.Who.UserID, Action: "stack.output.reveal", ObjectType: "stack",
				ObjectID: &s.ID, TeamID: &s.TeamID, Details: map[string]any{"run_id": r.Sub, "action": a.Action, "output": name}})
		})
		if err != nil {
			return err
		}
		c.Set(fiber.HeaderCacheControl, "no-store")
		return c.JSON(Revealed{Name: name, Value: value})
	})
}
