package teams

import (
	"context"

	"sort"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"horizon/functions/api"
	"horizon/shared/horizon"
	"horizon/shared/quota"
	"horizon/shared/store"
)

// Amount is one dimension of a team's usage: what it uses, its limit and what remains (both
// null when unlimited). Remaining is never negative: a team over a lowered limit has 0 left.
type Amount struct {
	Used      int64  `json:"used"`
	Limit     *int64 `json:"limit"`
	Remaining *int64 `json:"remaining"`
}

// Amounts are the four dimensions.
type Amounts struct {
	Machines  Amount `json:"machines"`
	VCPUs     Amount `json:"vcpus"`
	MemoryMiB Amount `json:"memory_mib"`
	DiskGiB   Amount `json:"disk_gib"`
}

// EnvironmentUsage is a team's usage in one environment. Limit is the environment's own
// narrowing (null: none); Remaining is what a stack of that environment can still take, the
// smaller of what the environment's and the team's limits leave.
type EnvironmentUsage struct {
	EnvironmentID uuid.UUID `json:"environment_id"`
	Name          string    `json:"name"`
	Amounts
}

// Usage is GET /v1/teams/{id}/usage.
type Usage struct {
	TeamID uuid.UUID `json:"team_id"`
	Amounts
	// Environments lists each environment where the team uses something or has a quota.
	Environments []EnvironmentUsage `json:"environments"`
}

// GetUsage returns what a team's stacks use, per dimension, with its limits and what remains,
// in all and per environment (anyone who sees the team, viewers too; another team's is 404).
func GetUsage(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[api.None]) error {
		if _, err := store.TeamGet(ctx, d.DB, r.Who.Scope(), r.ID); err != nil {
			return err
		}
		qt, err := store.QuotaGet(ctx, d.DB, r.ID)
		if err != nil {
			return err
		}
		u, err := quota.Count(ctx, d.DB, r.ID, uuid.Nil)
		if err != nil {
			return err
		}
		out := Usage{TeamID: r.ID, Amounts: amounts(u.Total, qt.Limits, nil), Environments: []EnvironmentUsage{}}
		envs := map[uuid.UUID]bool{}
		for env := range u.Environments {
			envs[env] = true
		}
		for env := range qt.Environments {
			envs[env] = true
		}
		for env := range envs {
			e, err := store.EnvironmentGet(ctx, d.DB, env)
			if err != nil {
				return err
			}
			out.Environments = append(out.Environments, EnvironmentUsage{EnvironmentID: env, Name: e.Name,
				Amounts: amounts(u.Environments[env], qt.Environments[env], &out.Amounts)})
		}
		sort.Slice(out.Environments, func(i, j int) bool { return out.Environments[i].Name < out.Environments[j].Name })
		return c.JSON(out)
	})
}

// amounts pairs usage with limits; within, when given, caps each remaining by the team's.
func amounts(used horizon.Resources, l horizon.Limits, within *Amounts) Amounts {
	one := func(d horizon.Dimension, outer *Amount) Amount {
		a := Amount{Used: used.Get(d), Limit: l.Get(d)}
		if a.Limit != nil {
			r := max(0, *a.Limit-a.Used)
			a.Remaining = &r
		}
		if outer != nil && outer.Remaining != nil && (a.Remaining == nil || *outer.Remaining < *a.Remaining) {
			r := *outer.Remaining
			a.Remaining = &r
		}
		return a
	}
	var outer [4]*Amount
	if within != nil {
		outer = [4]*Amount{&within.Machines, &within.VCPUs, &within.MemoryMiB, &within.DiskGiB}
	}
	return Amounts{Machines: one(horizon.DimMachines, outer[0]), VCPUs: one(horizon.DimVCPUs, outer[1]),
		MemoryMiB: one(horizon.DimMemoryMiB, outer[2]), DiskGiB: one(horizon.DimDiskGiB, outer[3])}
}
