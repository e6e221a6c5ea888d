package horizon

import (
	"time"

	"github.com/google/uuid"
)

// MaxWebhooksPerTeam bounds a team's subscriptions (and the global ones), as HCP Terraform
// bounds a workspace's notification configurations.
const MaxWebhooksPerTeam = 20

// Webhook is a notification subscription. TeamID nil is a global one (admins), which receives
// the events of every team and those that belong to no team (ISOs).
type Webhook struct {
	ID     uuid.UUID
	TeamID *uuid.UUID
	Name   string
	Kind   string
	// URLSealed is the destination, sealed; URLShown is what the API shows of it (its host).
	URLSealed      []byte
	URLShown       string
	Events         []string
	Enabled        bool
	DisabledReason *string
	// SecretSealed signs standard messages; PreviousSecretSealed too, until PreviousUntil.
	SecretSealed         []byte
	PreviousSecretSealed []byte
	PreviousUntil        *time.Time
	Version              int64
	CreatedAt, UpdatedAt time.Time
	// LastDelivery is the subscription's newest delivery, nil when it has none (or when the
	// query that loaded it does not say).
	LastDelivery *Delivery
}

// Delivery is one event's delivery to one subscription, with what its last attempt got.
type Delivery struct {
	ID           uuid.UUID
	WebhookID    uuid.UUID
	EventID      *uuid.UUID
	EventType    string
	State        string
	Attempts     int
	NextAt       time.Time
	LastStatus   *int
	LastLatency  *int
	LastResponse *string
	LastError    *string
	LastAt       *time.Time
	CreatedAt    time.Time
}

// The delivery states.
const (
	DeliveryPending   = "pending"
	DeliveryDelivered = "delivered"
	DeliveryFailed    = "failed"
)
