// Package proxmoxservers serves /v1/proxmox-servers: the Proxmox VE clusters Horizon builds on.
// Admins register, change, refresh and delete them; everyone reads them (users pick nodes and
// pools from the inventory).
//
// Registration talks to the cluster inside the request — an admin action, bounded by
// connectTimeout — because an operator must learn at once that a token, a fingerprint or a node
// is wrong: the API is checked (TLS pin or CA, token), the inventory discovered (nodes and
// their state, storages, pools, ISO files) and every configured node's SSH endpoint dialled
// with its pinned host key and Horizon's key. Nothing is saved when any of it fails (422 naming
// the field and the reason). "trust_on_first_use" on a node records the key the node presents
// now — an explicit admin choice, shown as host_key_source.
package proxmoxservers

import (
	"time"

	"github.com/google/uuid"

	"horizon/shared/horizon"
)

// Server is a Proxmox server as the API shows it: without its secrets.
type Server struct {
	ID             uuid.UUID `json:"id"`
	Name           string    `json:"name"`
	APIURL         string    `json:"api_url"`
	TokenID        string    `json:"token_id"`
	TLSFingerprint string    `json:"tls_fingerprint"`
	CACert         string    `json:"ca_cert"`
	SSHUser        string    `json:"ssh_user"`
	// SSHPublicKey is the public half of Horizon's key for the nodes, to install in their
	// authorized_keys.
	SSHPublicKey string    `json:"ssh_public_key"`
	PVEVersion   string    `json:"pve_version"`
	ClusterName  string    `json:"cluster_name"`
	RefreshedAt  time.Time `json:"refreshed_at"`
	Nodes        []Node    `json:"nodes"`
	Storages     []Storage `json:"storages"`
	Pools        []Pool    `json:"pools"`
	ISOFiles     []ISOFile `json:"iso_files"`
	Version      int64     `json:"version"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
}

// Node is a cluster member.
type Node struct {
	Name                  string  `json:"name"`
	Online                bool    `json:"online"`
	CPUs                  int     `json:"cpus"`
	MemoryBytes           int64   `json:"memory_bytes"`
	SSHAddress            *string `json:"ssh_address"`
	SSHHostKeyFingerprint *string `json:"ssh_host_key_fingerprint"`
	HostKeySource         *string `json:"host_key_source"`
	// TokenLacks are the privileges Horizon uses here that the API token does not hold.
	TokenLacks []string `json:"token_lacks"`
}

// Storage is a storage of the cluster.
type Storage struct {
	Name    string   `json:"name"`
	Type    string   `json:"type"`
	Content []string `json:"content"`
	Shared  bool     `json:"shared"`
	Nodes   []string `json:"nodes"`
	// TokenLacks are the privileges Horizon uses here that the API token does not hold.
	TokenLacks []string `json:"token_lacks"`
}

// Pool is a resource pool.
type Pool struct {
	Pool    string `json:"pool"`
	Comment string `json:"comment"`
	// TokenLacks are the privileges building machines here needs that the API token holds
	// neither on the pool nor on /vms.
	TokenLacks []string `json:"token_lacks"`
}

// ISOFile is an image on an iso storage.
type ISOFile struct {
	VolID     string   `json:"volid"`
	Storage   string   `json:"storage"`
	SizeBytes int64    `json:"size_bytes"`
	Nodes     []string `json:"nodes"`
}

func toServer(s horizon.ProxmoxServer) Server {
	out := Server{ID: s.ID, Name: s.Name, APIURL: s.APIURL, TokenID: s.TokenID, TLSFingerprint: s.TLSFingerprint,
		CACert: s.CACert, SSHUser: s.SSHUser, SSHPublicKey: s.SSHPublicKey, PVEVersion: s.PVEVersion,
		ClusterName: s.ClusterName, RefreshedAt: s.RefreshedAt, Version: s.Version, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt,
		Nodes: []Node{}, Storages: []Storage{}, Pools: []Pool{}, ISOFiles: []ISOFile{}}
	for _, n := range s.Nodes {
		out.Nodes = append(out.Nodes, Node{Name: n.Name, Online: n.Online, CPUs: n.CPUs, MemoryBytes: n.Memory,
			SSHAddress: n.SSHAddress, SSHHostKeyFingerprint: n.SSHHostKey, HostKeySource: n.HostKeySource, TokenLacks: nonNil(n.TokenLacks)})
	}
	for _, st := range s.Storages {
		out.Storages = append(out.Storages, Storage{Name: st.Name, Type: st.Type, Content: nonNil(st.Content), Shared: st.Shared, Nodes: nonNil(st.Nodes),
			TokenLacks: nonNil(st.TokenLacks)})
	}
	for _, p := range s.Pools {
		out.Pools = append(out.Pools, Pool{Pool: p.Pool, Comment: p.Comment, TokenLacks: nonNil(p.TokenLacks)})
	}
	for _, f := range s.ISOFiles {
		out.ISOFiles = append(out.ISOFiles, ISOFile{VolID: f.VolID, Storage: f.Storage, SizeBytes: f.Size, Nodes: nonNil(f.Nodes)})
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
