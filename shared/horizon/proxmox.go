package horizon

import (
	"time"

	"github.com/google/uuid"
)

// ProxmoxServer is a registered Proxmox VE cluster and its discovered inventory.
type ProxmoxServer struct {
	ID             uuid.UUID
	Name           string
	APIURL         string
	TokenID        string
	TokenSecret    []byte // sealed, purpose "proxmox_servers.token_secret"
	TLSFingerprint string
	CACert         string
	SSHUser        string
	SSHPrivateKey  []byte // sealed, purpose "proxmox_servers.ssh_private_key"
	SSHPublicKey   string
	PVEVersion     string
	ClusterName    string
	RefreshedAt    time.Time
	Version        int64
	CreatedAt      time.Time
	UpdatedAt      time.Time

	Nodes    []ProxmoxNode
	Storages []ProxmoxStorage
	Pools    []ProxmoxPool
	ISOFiles []ProxmoxISOFile
}

// Node returns the named node, or nil.
func (s *ProxmoxServer) Node(name string) *ProxmoxNode {
	for i := range s.Nodes {
		if s.Nodes[i].Name == name {
			return &s.Nodes[i]
		}
	}
	return nil
}

// Host-key sources: how a node's SSH host key came to be trusted.
const (
	HostKeyPinned          = "pinned"
	HostKeyTrustOnFirstUse = "trust_on_first_use"
)

// ProxmoxNode is a cluster member. SSHAddress and SSHHostKey are nil until an admin configures
// how Horizon reaches the node (uploads of cloud-init snippets need it).
type ProxmoxNode struct {
	Name          string
	Online        bool
	CPUs          int
	Memory        int64
	SSHAddress    *string
	SSHHostKey    *string
	HostKeySource *string
	// TokenLacks are the privileges Horizon uses on the node the API token does not hold.
	TokenLacks []string
}

// ProxmoxStorage is a storage of a cluster and the nodes it is active on.
type ProxmoxStorage struct {
	Name    string
	Type    string
	Content []string
	Shared  bool
	Path    string
	Nodes   []string
	// TokenLacks are the privileges Horizon uses on the storage the API token does not hold.
	TokenLacks []string
}

// ProxmoxPool is a resource pool.
type ProxmoxPool struct {
	Pool    string
	Comment string
	// TokenLacks are the privileges building machines in the pool needs that the API token
	// holds neither on the pool nor on /vms.
	TokenLacks []string
}

// ProxmoxISOFile is an image file on an iso storage, and the nodes that see it.
type ProxmoxISOFile struct {
	VolID   string
	Storage string
	Size    int64
	Nodes   []string
}
