package stacks

import (
	"context"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"horizon/functions/api"
	"horizon/shared/events"
	"horizon/shared/horizon"
	"horizon/shared/problem"
	"horizon/shared/queue"
	"horizon/shared/store"
)

// Drift is what the last drift checks found on the stack's machines (workers/drift): the
// findings, accepted ones included, when the stack was last checked, and the last failure
// of a check of one of its Proxmox servers since then.
type Drift struct {
	// Drifted: at least one finding is not accepted.
	Drifted   bool           `json:"drifted"`
	CheckedAt *time.Time     `json:"checked_at"`
	Findings  []DriftFinding `json:"findings"`
	// CheckError is why the last check of one of the stack's servers failed, when it failed
	// after the stack's last successful check; nothing was concluded from it.
	CheckError *string    `json:"check_error"`
	FailedAt   *time.Time `json:"failed_at"`
}

// DriftFinding is one property of one machine that differs from what Horizon set on it.
type DriftFinding struct {
	ID        uuid.UUID `json:"id"`
	Job       string    `json:"job"`
	Execution int       `json:"execution"`
	// Path is the property ("memory", "net0.bridge", "scsi0.size", "node"); "" is the machine.
	Path       string           `json:"path"`
	Kind       string           `json:"kind"`
	Expected   any              `json:"expected"`
	Actual     any              `json:"actual"`
	Since      time.Time        `json:"since"`
	ChangedBy  *string          `json:"changed_by"`
	ChangedAt  *time.Time       `json:"changed_at"`
	LastSeenAt time.Time        `json:"last_seen_at"`
	Accepted   *DriftAcceptance `json:"accepted"`
	Version    int64            `json:"version"`
}

// DriftAcceptance is who accepted a finding, when and why.
type DriftAcceptance struct {
	By     *uuid.UUID `json:"by"`
	At     time.Time  `json:"at"`
	Reason string     `json:"reason"`
}

func toDriftFinding(f store.DriftFinding) DriftFinding {
	out := DriftFinding{ID: f.ID, Job: f.Job, Execution: f.Index, Path: f.Path, Kind: string(f.Kind), Expected: f.Expected, Actual: f.Actual,
		Since: f.Since, ChangedBy: f.ChangedBy, ChangedAt: f.ChangedAt, LastSeenAt: f.LastSeenAt, Version: f.Version}
	if f.AcceptedAt != nil {
		out.Accepted = &DriftAcceptance{By: f.AcceptedBy, At: *f.AcceptedAt}
		if f.AcceptedReason != nil {
			out.Accepted.Reason = *f.AcceptedReason
		}
	}
	return out
}

// noDrift is the drift of a stack never checked.
func noDrift() Drift { return Drift{Findings: []DriftFinding{}} }

// toDrift renders a stack's drift findings and last check (store.StackView).
func toDrift(v store.StackView) Drift {
	out := noDrift()
	for _, f := range v.Findings {
		out.Findings = append(out.Findings, toDriftFinding(f))
		out.Drifted = out.Drifted || f.AcceptedAt == nil
	}
	out.CheckedAt, out.FailedAt, out.CheckError = v.CheckedAt, v.FailedAt, v.CheckError
	return out
}

// DriftCheckAccepted is the answer of POST /v1/stacks/{id}/drift-check.
type DriftCheckAccepted struct {
	StackID uuid.UUID `json:"stack_id"`
	// Servers is the number of Proxmox servers whose check was queued.
	Servers int `json:"servers"`
	// CheckedAt is the stack's last check before this one: the new result is there when the
	// stack's drift.checked_at moves past it.
	CheckedAt *time.Time `json:"checked_at"`
}

// CheckDrift queues a drift check of the Proxmox servers the stack's machines are on, now:
// 202. A draft or removed stack has no machine to compare (409), nor has a stack whose run is
// in progress: Horizon is changing them (409). A stack whose last run failed is checked
// (the periodic checks skip it).
func CheckDrift(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[api.None]) error {
		s, err := store.StackGet(ctx, d.DB, r.Who.Scope(), r.ID)
		if err != nil {
			return err
		}
		switch {
		case s.State == horizon.StackDraft || s.State == horizon.StackRemoved || s.State == horizon.StackRemoving:
			return problem.Conflict("A %s stack has no machine to check for drift.", s.State)
		case s.State.Busy():
			return problem.Busy("A run is in progress on the stack: its machines are being changed by Horizon; check when it ends.")
		}
		servers, err := store.DriftServersOfStack(ctx, d.DB, r.ID)
		if err != nil {
			return err
		}
		if len(servers) == 0 {
			return problem.Conflict("The stack has no machine Horizon recorded after an apply: nothing to check for drift.")
		}
		for _, srv := range servers {
			if err := d.Queue.Enqueue(ctx, queue.NewDriftCheck(d.Queues, queue.DriftCheck{ServerID: srv, Stacks: []uuid.UUID{r.ID}}, 0, time.Now())); err != nil {
				return problem.Unavailable(err, "The drift check could not be queued; try again.")
			}
		}
		checked, _, _, err := store.DriftCheckOfStack(ctx, d.DB, r.ID)
		if err != nil {
			return err
		}
		return c.Status(fiber.StatusAccepted).JSON(DriftCheckAccepted{StackID: r.ID, Servers: len(servers), CheckedAt: checked})
	})
}

// acceptRequest is the body of POST …/drift/findings/{finding}/accept.
type acceptRequest struct {
	Reason string `json:"reason"`
}

// maxAcceptReason bounds an acceptance's reason, in bytes.
const maxAcceptReason = 500

// AcceptDrift records that the caller accepts a drift finding as it stands, with a reason:
// while Proxmox shows the accepted value, it does not count as drift; another value raises it
// again. If-Match names the finding's version (its ETag, as "version" in the stack's drift):
// 412 when the finding changed since. 404 for a finding the stack does not have. An accept that
// leaves the stack without unaccepted findings announces stack.drift.cleared.
func AcceptDrift(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[acceptRequest]) error {
		r.Body.Reason = strings.TrimSpace(r.Body.Reason)
		switch {
		case r.Body.Reason == "":
			return problem.InvalidField("reason", "Say why the change is accepted.")
		case len(r.Body.Reason) > maxAcceptReason:
			return problem.InvalidField("reason", "At most %d bytes.", maxAcceptReason)
		}
		var out store.DriftFinding
		var s horizon.Stack
		var wasDrifted, drifted bool
		err := store.WithTx(ctx, d.DB, func(ctx context.Context, tx pgx.Tx) error {
			var err error
			if s, err = store.StackGetForUpdate(ctx, tx, r.Who.Scope(), r.ID); err != nil {
				return err
			}
			out, err = store.DriftFindingAccept(ctx, tx, s.ID, r.Sub, r.IfVersion, r.Who.UserID, r.Body.Reason)
			if err != nil {
				return err
			}
			if wasDrifted, drifted, err = store.DriftAnnounce(ctx, tx, s.ID); err != nil {
				return err
			}
			return store.ActivityRecord(ctx, tx, store.Activity{ActorID: &r.Who.UserID, Action: "stack.drift.accept", ObjectType: "stack",
				ObjectID: &s.ID, TeamID: &s.TeamID, Details: map[string]any{"finding_id": out.ID, "job": out.Job, "execution": out.Index,
					"path": out.Path, "kind": out.Kind, "reason": r.Body.Reason}})
		})
		if err != nil {
			return err
		}
		if wasDrifted && !drifted {
			d.Notify(ctx, events.Event{Type: events.Drift, ID: s.ID, StackID: s.ID, TeamID: s.TeamID, State: events.DriftClearedState})
		}
		c.Set(fiber.HeaderETag, api.ETag(out.Version))
		return c.JSON(toDriftFinding(out))
	})
}
