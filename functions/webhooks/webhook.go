// Package webhooks serves /v1/webhooks: notification subscriptions (shared/notify has the
// design). A subscription belongs to a team, whose members manage it and whose viewers read it,
// or, without team_id, is global: only admins see and manage those, since they receive every
// team's events. Another team's subscription is 404, as for every object.
//
// The destination URL is checked when saved (form and resolved addresses, shared/notify) and
// sealed with the signing secret; the API shows only the URL's host, and the secret once, when
// it is made (creation, rotation). Enabling a subscription — at creation or by PATCH — first
// sends a test message from the request and refuses (422 naming enabled) unless the
// destination answers 2xx, as HCP Terraform's notification configurations do. POST …/test
// sends one too and records it in the delivery log; every other message leaves through the
// outbox and the workers.
package webhooks

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"horizon/functions/api"
	"horizon/shared/auth"
	"horizon/shared/horizon"
	"horizon/shared/notify"
	"horizon/shared/problem"
	"horizon/shared/store"
)

// Webhook is a subscription as the API shows it.
type Webhook struct {
	ID             uuid.UUID  `json:"id"`
	TeamID         *uuid.UUID `json:"team_id"`
	Name           string     `json:"name"`
	Kind           string     `json:"kind"`
	URL            string     `json:"url"`
	Events         []string   `json:"events"`
	Enabled        bool       `json:"enabled"`
	DisabledReason *string    `json:"disabled_reason"`
	// LastDelivery is the newest entry of its delivery log (null before the first), so that a
	// list shows each subscription's state without a request per row.
	LastDelivery *Delivery `json:"last_delivery"`
	Version      int64     `json:"version"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
}

func toWebhook(w horizon.Webhook) Webhook {
	out := Webhook{ID: w.ID, TeamID: w.TeamID, Name: w.Name, Kind: w.Kind, URL: w.URLShown, Events: w.Events, Enabled: w.Enabled,
		DisabledReason: w.DisabledReason, Version: w.Version, CreatedAt: w.CreatedAt, UpdatedAt: w.UpdatedAt}
	if w.LastDelivery != nil {
		d := toDelivery(*w.LastDelivery)
		out.LastDelivery = &d
	}
	return out
}

// Delivery is one entry of a subscription's delivery log.
type Delivery struct {
	ID          uuid.UUID  `json:"id"`
	EventID     *uuid.UUID `json:"event_id"`
	EventType   string     `json:"event_type"`
	State       string     `json:"state"`
	Attempts    int        `json:"attempts"`
	NextAt      *time.Time `json:"next_attempt_at"`
	LastStatus  *int       `json:"last_status"`
	LastLatency *int       `json:"last_latency_ms"`
	// LastResponse is the first 1 KiB of the last answer.
	LastResponse *string    `json:"last_response"`
	LastError    *string    `json:"last_error"`
	LastAt       *time.Time `json:"last_attempt_at"`
	CreatedAt    time.Time  `json:"created_at"`
}

func toDelivery(d horizon.Delivery) Delivery {
	out := Delivery{ID: d.ID, EventID: d.EventID, EventType: d.EventType, State: d.State, Attempts: d.Attempts,
		LastStatus: d.LastStatus, LastLatency: d.LastLatency, LastResponse: d.LastResponse, LastError: d.LastError,
		LastAt: d.LastAt, CreatedAt: d.CreatedAt}
	if d.State == horizon.DeliveryPending {
		out.NextAt = &d.NextAt
	}
	return out
}

// canManage refuses (403) a member who may read w but not change it: a global subscription
// (which non-admins cannot even see: 404 first). Viewers never get here: the route table's
// role refuses them first.
func canManage(who auth.Principal, team *uuid.UUID) error {
	if team == nil && !who.IsAdmin() {
		return problem.Forbidden("Only admins manage global subscriptions; give a team_id.")
	}
	if team != nil && !who.InTeam(*team) {
		return horizon.Invalid("team_id", "is not one of your teams")
	}
	return nil
}

// get loads the subscription of the path's {id} that the caller sees.
func get[B any](ctx context.Context, d api.Deps, r api.Req[B]) (horizon.Webhook, error) {
	return store.WebhookGet(ctx, d.DB, r.Who.Scope(), r.ID)
}

// getManaged is get for a change: the subscription of the path, which the caller must be
// allowed to manage (canManage).
func getManaged[B any](ctx context.Context, d api.Deps, r api.Req[B]) (horizon.Webhook, error) {
	w, err := get(ctx, d, r)
	if err != nil {
		return w, err
	}
	return w, canManage(r.Who, w.TeamID)
}

// check validates a subscription's fields, naming the first bad one of each.
func check(ctx context.Context, d api.Deps, p *horizon.Problems, name, kind, url string, events []string) {
	horizon.CheckName(p, "name", name, horizon.MaxNameLength)
	if !notify.Kind(kind).Valid() {
		p.Add("kind", `must be "standard", "slack" or "mattermost"`)
	}
	if err := d.Webhooks.CheckDestination(ctx, url); err != nil {
		p.Add("url", "%s", err.Error())
	}
	if field, msg, ok := notify.CheckEvents(events); !ok {
		p.Add(field, "%s", msg)
	}
}

// verify sends a test message to a destination that is being enabled and refuses (422 naming
// enabled) unless it answers 2xx.
func verify(ctx context.Context, d api.Deps, kind, url, secret string, team *uuid.UUID, id uuid.UUID) error {
	data := map[string]any{"webhook_id": id.String()}
	if team != nil {
		data["team_id"] = team.String()
	}
	res := d.Webhooks.Send(ctx, notify.Kind(kind), url, notify.Event{ID: uuid.NewString(), Type: notify.Test, At: d.Now(), Data: data}, []string{secret})
	if res.OK() {
		return nil
	}
	why := fmt.Sprintf("the destination answered %d to a test message", res.Status)
	if res.Err != nil {
		why = "the test message could not be delivered: " + res.Err.Error()
	}
	return horizon.Invalid("enabled", "%s; a subscription is enabled only once its destination accepts a test message", why)
}
