package pve

// State describes a running sandbox for the tools that use it: deploy/sandbox writes it as
// JSON to its -state file so that a dev script can register the clusters in Horizon, and the
// admin endpoint GET /sandbox/state returns it.
type State struct {
	AdminToken string         `json:"admin_token,omitempty"`
	VMSSHPort  int            `json:"vm_ssh_port"`
	Clusters   []ClusterState `json:"clusters"`
}

// ClusterState is one cluster's part of State.
type ClusterState struct {
	Name string `json:"name"`
	// URL is the listener's base URL; the API is under APIURL.
	URL             string       `json:"url"`
	APIURL          string       `json:"api_url"`
	CertFingerprint string       `json:"cert_fingerprint"`
	CACertPEM       string       `json:"ca_cert_pem"`
	TokenID         string       `json:"token_id"`
	TokenSecret     string       `json:"token_secret"`
	Nodes           []NodeState  `json:"nodes"`
	Storages        []StorageRef `json:"storages"`
}

// NodeState is one node's SSH endpoint.
type NodeState struct {
	Name               string `json:"name"`
	SSHAddr            string `json:"ssh_addr"`
	SSHUser            string `json:"ssh_user"`
	HostKeyFingerprint string `json:"host_key_fingerprint"`
	// HostKey is the public host key in authorized_keys form, for known_hosts.
	HostKey string `json:"host_key"`
}

// StorageRef names a storage and its path, as /storage returns them.
type StorageRef struct {
	Name    string   `json:"name"`
	Type    string   `json:"type"`
	Path    string   `json:"path,omitempty"`
	Content []string `json:"content"`
	Shared  bool     `json:"shared"`
}

// State returns the sandbox's current endpoints, keys and fingerprints.
func (sb *Sandbox) State() State {
	st := State{AdminToken: sb.cfg.AdminToken, VMSSHPort: sb.cfg.VMSSHPort}
	for _, c := range sb.clusters {
		cs := ClusterState{
			Name:            c.cfg.Name,
			URL:             c.URL(),
			APIURL:          c.URL() + apiPrefix,
			CertFingerprint: c.CertFingerprint(),
			CACertPEM:       string(c.CACertPEM()),
			TokenID:         c.TokenID(),
			TokenSecret:     c.TokenSecret(),
		}
		for _, n := range c.nodes {
			cs.Nodes = append(cs.Nodes, NodeState{
				Name:               n.cfg.Name,
				SSHAddr:            n.SSHAddr(),
				SSHUser:            "root",
				HostKeyFingerprint: n.HostKeyFingerprint(),
				HostKey:            authorizedKeyLine(n.HostKey()),
			})
		}
		for _, s := range c.cfg.Storages {
			cs.Storages = append(cs.Storages, StorageRef{Name: s.Name, Type: s.Type, Path: s.Path, Content: s.Content, Shared: s.Shared})
		}
		st.Clusters = append(st.Clusters, cs)
	}
	return st
}
