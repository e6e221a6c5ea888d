package teams

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"sort"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"horizon/functions/api"
	"horizon/shared/auth"
	"horizon/shared/horizon"
	"horizon/shared/store"
)

// QuotaRequest is the body of PUT and PATCH /v1/teams/{id}/quotas. Limits are keyed by
// dimension (machines, vcpus, memory_mib, disk_gib): a whole number of 0 or more, or null for
// unlimited. Environments narrow the limits for the team's stacks of one environment, keyed by
// its id.
//
// PUT replaces everything: a dimension or an environment left out is unlimited. PATCH changes
// what it gives: a dimension given replaces its limit (null: unlimited), an environment given
// replaces that environment's limits (null: its narrowing is removed); the rest stays.
type QuotaRequest struct {
	Limits       map[string]json.RawMessage            `json:"limits"`
	Environments map[string]map[string]json.RawMessage `json:"environments"`
}

// Quota is a team's quotas as the API shows them.
type Quota struct {
	TeamID       uuid.UUID                 `json:"team_id"`
	Limits       horizon.Limits            `json:"limits"`
	Environments map[string]horizon.Limits `json:"environments"`
	// Version is 0 while the team never had a quota; send it back as If-Match otherwise.
	Version   int64      `json:"version"`
	UpdatedAt *time.Time `json:"updated_at"`
}

func toQuota(q horizon.Quota) Quota {
	out := Quota{TeamID: q.TeamID, Limits: q.Limits, Environments: map[string]horizon.Limits{}, Version: q.Version, UpdatedAt: q.UpdatedAt}
	for env, l := range q.Environments {
		out.Environments[env.String()] = l
	}
	return out
}

// GetQuotas returns a team's quotas (anyone who sees the team; another team's is 404). A team
// without quotas is unlimited everywhere, with version 0 and no ETag.
func GetQuotas(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[api.None]) error {
		if _, err := store.TeamGet(ctx, d.DB, r.Who.Scope(), r.ID); err != nil {
			return err
		}
		q, err := store.QuotaGet(ctx, d.DB, r.ID)
		if err != nil {
			return err
		}
		if q.Version > 0 {
			c.Set(fiber.HeaderETag, api.ETag(q.Version))
		}
		return c.JSON(toQuota(q))
	})
}

// PutQuotas replaces a team's quotas (admin), honouring If-Match. Lowering a limit below what
// the team uses is allowed: it refuses nothing that exists, only what would grow.
func PutQuotas(d api.Deps) fiber.Handler { return editQuotas(d, true) }

// PatchQuotas changes the dimensions and environments it gives of a team's quotas (admin),
// honouring If-Match.
func PatchQuotas(d api.Deps) fiber.Handler { return editQuotas(d, false) }

func editQuotas(d api.Deps, replace bool) fiber.Handler {
	return api.Edit(d, func(ctx context.Context, tx pgx.Tx, r api.Req[QuotaRequest]) (api.Object, error) {
		if _, err := store.TeamGet(ctx, tx, auth.Scope{All: true}, r.ID); err != nil {
			return api.Object{}, err
		}
		cur, err := store.QuotaGet(ctx, tx, r.ID)
		if err != nil {
			return api.Object{}, err
		}
		next := horizon.Quota{TeamID: r.ID, Environments: map[uuid.UUID]horizon.Limits{}}
		if !replace {
			next.Limits = cur.Limits
			for env, l := range cur.Environments {
				next.Environments[env] = l
			}
		}
		var p horizon.Problems
		next.Limits = readLimits(&p, "limits", r.Body.Limits, next.Limits)
		var given []uuid.UUID
		for _, key := range sortedKeys(r.Body.Environments) {
			field := horizon.JoinPath("environments", key)
			env, err := uuid.Parse(key)
			if err != nil {
				p.Add(field, "is not an environment id")
				continue
			}
			raw := r.Body.Environments[key]
			if raw == nil {
				if replace {
					p.Add(field, "must be an object of limits (PATCH removes an environment's quota with null)")
				}
				delete(next.Environments, env)
				continue
			}
			given = append(given, env)
			next.Environments[env] = readLimits(&p, field, raw, horizon.Limits{})
		}
		missing, err := store.EnvironmentsMissing(ctx, tx, given)
		if err != nil {
			return api.Object{}, err
		}
		for _, env := range missing {
			p.Add(horizon.JoinPath("environments", env.String()), "is not an environment")
		}
		if err := p.SortedErr(); err != nil {
			return api.Object{}, err
		}
		saved, err := store.QuotaPut(ctx, tx, next, r.IfVersion)
		if err != nil {
			return api.Object{}, err
		}
		return api.Object{View: toQuota(saved), Version: saved.Version}, store.ActivityRecord(ctx, tx, store.Activity{ActorID: &r.Who.UserID,
			Action: "team.quotas", ObjectType: "team", ObjectID: &r.ID, TeamID: &r.ID, Details: map[string]any{"version": saved.Version}})
	})
}

// readLimits applies the dimensions of raw to l: each a whole number of 0 or more, or null
// for unlimited; an unknown dimension is a problem.
func readLimits(p *horizon.Problems, at string, raw map[string]json.RawMessage, l horizon.Limits) horizon.Limits {
	for _, key := range sortedKeys(raw) {
		field := horizon.JoinPath(at, key)
		var dst **int64
		switch horizon.Dimension(key) {
		case horizon.DimMachines:
			dst = &l.Machines
		case horizon.DimVCPUs:
			dst = &l.VCPUs
		case horizon.DimMemoryMiB:
			dst = &l.MemoryMiB
		case horizon.DimDiskGiB:
			dst = &l.DiskGiB
		default:
			p.Add(field, "is not a quota dimension: want machines, vcpus, memory_mib or disk_gib")
			continue
		}
		v := bytes.TrimSpace(raw[key])
		if bytes.Equal(v, []byte("null")) {
			*dst = nil
			continue
		}
		var f float64
		if err := json.Unmarshal(v, &f); err != nil {
			p.Add(field, "must be a whole number of 0 or more, or null for unlimited; got %s", clip(v))
			continue
		}
		switch {
		case f < 0:
			p.Add(field, "must not be negative, got %v", f)
		case f != math.Trunc(f) || f > 1<<53:
			p.Add(field, "must be a whole number (at most 2^53), got %v", f)
		default:
			n := int64(f)
			*dst = &n
		}
	}
	return l
}

func clip(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "…"
	}
	return string(b)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
