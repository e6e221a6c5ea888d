package horizon

import (
	"net/netip"
	"time"

	"github.com/google/uuid"

	"horizon/shared/auth"
)

// Team groups users; stacks belong to a team.
type Team struct {
	ID        uuid.UUID
	Name      string
	Version   int64
	CreatedAt time.Time
	UpdatedAt time.Time
}

// User is a person or a bot. Role is one of "admin", "member", "viewer".
type User struct {
	ID        uuid.UUID
	Name      string
	Email     string
	Role      string
	Teams     []uuid.UUID
	Version   int64
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Token is an API token's metadata; the token itself is never stored.
type Token struct {
	ID     uuid.UUID
	UserID uuid.UUID
	Name   string
	// Scope is what the token may call.
	Scope      auth.TokenScope
	CreatedAt  time.Time
	LastUsedAt *time.Time
	RevokedAt  *time.Time
}

// Network is an IP network VMs are attached to, with the addresses Horizon hands out on it.
type Network struct {
	ID        uuid.UUID
	Name      string
	CIDR      netip.Prefix
	Gateway   netip.Addr
	DNS       []netip.Addr
	Bridge    string
	VLAN      *int
	Version   int64
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Address is a named IP reserved on a network. ExecutionID is set while the address is
// attached to a stack execution.
type Address struct {
	ID          uuid.UUID
	NetworkID   uuid.UUID
	Name        string
	IP          netip.Addr
	ExecutionID *uuid.UUID
	AttachedAt  *time.Time
	CreatedAt   time.Time
}

// AddressState is "free" or "attached".
func (a Address) State() string {
	if a.ExecutionID != nil {
		return "attached"
	}
	return "free"
}

// Environment is where a stack may run: which networks, Proxmox servers and Nagios server it may
// use.
type Environment struct {
	ID          uuid.UUID
	Name        string
	Description string
	NetworkIDs  []uuid.UUID
	// ProxmoxServerIDs are the clusters stacks of this environment may be built on.
	ProxmoxServerIDs []uuid.UUID
	// NagiosServerID is where machines are published for monitoring, if anywhere.
	NagiosServerID *uuid.UUID
	Version        int64
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// SSHKey is a user's public key, installed on the VMs they build.
type SSHKey struct {
	ID          uuid.UUID
	UserID      uuid.UUID
	Name        string
	PublicKey   string
	Type        string
	Bits        int
	Fingerprint string
	CreatedAt   time.Time
}

// NagiosServer is a Nagios Core installation Horizon publishes machines to. The password is
// kept sealed; it is opened only by the code that talks to Nagios.
type NagiosServer struct {
	ID       uuid.UUID
	Name     string
	URL      string
	Username string
	Password []byte // sealed with secrets.Box, purpose "nagios_servers.password"
	// How Horizon writes its object files: over SSH (host key pinned), in ConfigDir, then
	// VerifyCommand and ReloadCommand.
	SSHAddress    string
	SSHUser       string
	SSHPrivateKey []byte // sealed, purpose "nagios_servers.ssh_private_key"; nil if never given
	SSHHostKey    string // SHA256 fingerprint
	ConfigDir     string
	VerifyCommand string
	ReloadCommand string
	// What the CGIs listed at the last discovery (host groups with members, commands).
	Hostgroups     []string
	Commands       []string
	DiscoveredAt   *time.Time
	DiscoveryError *string
	Version        int64
	CreatedAt      time.Time
	UpdatedAt      time.Time
}
