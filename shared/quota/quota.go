// Package quota counts what a team's stacks use and checks a change of one stack against the
// team's quotas (horizon.Quota: limits over all its stacks, narrowed per environment).
//
// Decisions:
//
//   - What counts: every execution not yet destroyed (active, or removing until its destroy
//     ends) of every stack of the team that is neither a draft nor removed, each costing what
//     its job's template version declares (template.Job.Cost) with its answers. A draft counts
//     nothing; a failed stack counts all its executions, built or not, until it is removed, so
//     that a retry or a run again never grows usage and never needs a check; a removal frees
//     each machine when its destroy ends; a force-remove frees everything at once. The rule is
//     written once, as the SQL function quota_counts (migration 00029).
//   - The database keeps both each execution's cost, computed in the statement that writes its
//     answers or moves its stack to another template version (migration 00027), and each
//     team's usage per environment (team_usage, migration 00029), moved by triggers in the
//     statement that changes an execution's state, stack or cost or a stack's state, team or
//     environment: no writer can forget it, no crash can separate it from its change, and a
//     count reads a few rows whatever the number of executions. The triggers add and take
//     away (never recount), so concurrent changes commute; a test holds team_usage to the SUM
//     of the counted executions' costs after every kind of change.
//   - Only growth is checked. A change is refused when, in a dimension with a limit, it makes
//     the stack use more than before and the team would then use more than the limit; a quota
//     lowered below what a team uses refuses nothing that exists, only what would grow.
//   - A refusal names the dimension, the need, what remains and the field that causes it: the
//     parameter a resource reads, or the execution itself for a machine or a constant.
//   - Serialised in Postgres: a request that grows usage locks the team's quota row
//     (store.QuotaLock) in the transaction that writes its run and counts again there, so of
//     two requests racing for the last of a quota exactly one wins. A team without a quota
//     has nothing to lock and nothing to check.
//   - The preflight's check, before that transaction, costs no round trip: the quota and the
//     usage come with the environment the preflight reads anyway (store.EnvironmentWithQuota),
//     the usage only when the team has a quota. The locked re-check cannot be folded so: a read
//     in the statement that takes the lock would see usage from before the lock was granted.
package quota

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"horizon/shared/horizon"
	"horizon/shared/store"
)

// Usage is what a team's stacks use, in all and per environment.
type Usage struct {
	Total        horizon.Resources
	Environments map[uuid.UUID]horizon.Resources
}

// Count returns what the team's stacks use, leaving out the stack except (uuid.Nil for none):
// the usage the change of that stack is checked against. One query of a few rows whatever the
// number of executions: the team's usage is kept as it changes (store.UsageByEnvironment).
func Count(ctx context.Context, q store.Querier, team, except uuid.UUID) (Usage, error) {
	byEnv, err := store.UsageByEnvironment(ctx, q, team, except)
	if err != nil {
		return Usage{}, err
	}
	u := Usage{Environments: map[uuid.UUID]horizon.Resources{}}
	for env, c := range byEnv {
		u.add(env, c)
	}
	return u, nil
}

func (u *Usage) add(env uuid.UUID, c horizon.Resources) {
	u.Total = u.Total.Add(c)
	u.Environments[env] = u.Environments[env].Add(c)
}

// Item is one execution of a stack as a change sees it: what it counts before and after the
// change (zero when it does not count then), and Field, the request field that sets its amount
// in a dimension.
type Item struct {
	Before, After horizon.Resources
	Field         func(horizon.Dimension) string
}

// Delta is what a change of a stack adds to its team's usage (negative: frees).
func Delta(items []Item) horizon.Resources {
	var d horizon.Resources
	for _, it := range items {
		d = d.Add(it.After.Sub(it.Before))
	}
	return d
}

// Check returns the problems of a change of one stack of environment env (named envName)
// against the team's quota, given what the team's other stacks use: one per dimension and
// scope (the team, the team in env) that the change grows beyond its limit.
func Check(qt horizon.Quota, others Usage, env uuid.UUID, envName string, items []Item) []horizon.FieldError {
	var before, after horizon.Resources
	for _, it := range items {
		before, after = before.Add(it.Before), after.Add(it.After)
	}
	scopes := []struct {
		limits horizon.Limits
		used   horizon.Resources
		where  string
	}{{qt.Limits, others.Total, "the team has"}}
	if l, ok := qt.Environments[env]; ok {
		scopes = append(scopes, struct {
			limits horizon.Limits
			used   horizon.Resources
			where  string
		}{l, others.Environments[env], "the team has, in environment " + envName + ","})
	}
	var out []horizon.FieldError
	for _, s := range scopes {
		for _, d := range horizon.Dimensions {
			limit := s.limits.Get(d)
			grow := after.Get(d) - before.Get(d)
			if limit == nil || grow <= 0 {
				continue
			}
			used := s.used.Get(d) + before.Get(d)
			if used+grow <= *limit {
				continue
			}
			remaining := max(0, *limit-used)
			out = append(out, horizon.FieldError{Field: culprit(items, d, remaining),
				Message: fmt.Sprintf("exceeds the %s quota: needs %s more, but %s %d of its %d left", d, d.Unit(grow), s.where, remaining, *limit)})
		}
	}
	return out
}

// culprit is the field of the item whose growth in d goes past what remains: the first one
// the quota cannot hold, in the order of items.
func culprit(items []Item, d horizon.Dimension, remaining int64) string {
	var sum int64
	last := ""
	for _, it := range items {
		g := it.After.Get(d) - it.Before.Get(d)
		if g <= 0 {
			continue
		}
		last = it.Field(d)
		if sum += g; sum > remaining {
			return last
		}
	}
	return last
}
