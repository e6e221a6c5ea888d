// Package networks serves /v1/networks and their named addresses. Admins write; every
// authenticated user reads (networks are catalogue, not team-owned).
package networks

import (
	"time"

	"github.com/google/uuid"

	"horizon/shared/horizon"
)

// Network is a network as the API shows it.
type Network struct {
	ID        uuid.UUID `json:"id"`
	Name      string    `json:"name"`
	CIDR      string    `json:"cidr"`
	Gateway   string    `json:"gateway"`
	DNS       []string  `json:"dns"`
	Bridge    string    `json:"bridge"`
	VLAN      *int      `json:"vlan"`
	Version   int64     `json:"version"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

func toNetwork(n horizon.Network) Network {
	dns := make([]string, len(n.DNS))
	for i, a := range n.DNS {
		dns[i] = a.String()
	}
	return Network{ID: n.ID, Name: n.Name, CIDR: n.CIDR.String(), Gateway: n.Gateway.String(), DNS: dns,
		Bridge: n.Bridge, VLAN: n.VLAN, Version: n.Version, CreatedAt: n.CreatedAt, UpdatedAt: n.UpdatedAt}
}

// Address is an address as the API shows it.
type Address struct {
	ID          uuid.UUID  `json:"id"`
	NetworkID   uuid.UUID  `json:"network_id"`
	Name        string     `json:"name"`
	IP          string     `json:"ip"`
	State       string     `json:"state"`
	ExecutionID *uuid.UUID `json:"execution_id"`
	AttachedAt  *time.Time `json:"attached_at"`
	CreatedAt   time.Time  `json:"created_at"`
	// Stack is the stack an attached address belongs to, in lists, when the caller may see it.
	Stack *AddressStack `json:"stack,omitempty"`
}

// AddressStack names the stack an attached address belongs to.
type AddressStack struct {
	ID   uuid.UUID `json:"id"`
	Name string    `json:"name"`
}

func toAddress(a horizon.Address) Address {
	return Address{ID: a.ID, NetworkID: a.NetworkID, Name: a.Name, IP: a.IP.String(), State: a.State(),
		ExecutionID: a.ExecutionID, AttachedAt: a.AttachedAt, CreatedAt: a.CreatedAt}
}
