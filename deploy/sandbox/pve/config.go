package pve

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Config describes a whole sandbox: one or more clusters, their nodes, storages, pools and
// API tokens, and the behaviour shared by all of them. DefaultConfig returns a ready one;
// LoadConfig reads the YAML form (the keys are the yaml tags below).
type Config struct {
	// TaskDuration is how long every asynchronous task (UPID) runs before it finishes.
	// Default 50ms; the demo uses a longer one so that progress is visible.
	TaskDuration time.Duration `yaml:"task_duration"`
	// UploadMinDuration keeps every SFTP upload on a node open at least this long (the close
	// of the written file waits), widening the window in which a second concurrent upload is
	// detected. Default 0.
	UploadMinDuration time.Duration `yaml:"upload_min_duration"`
	// Latency is added to every API call (see also Sandbox.SetLatency). Default 0.
	Latency time.Duration `yaml:"latency"`
	// VMSSHPort is the port a started VM's SSH server listens on, on the VM's own 127.x.y.z
	// address. Default 22; 0 picks a random port (see Cluster.VMSSHAddr).
	VMSSHPort int `yaml:"vm_ssh_port"`
	// AdminToken protects the admin endpoints under /sandbox/ on every cluster listener
	// (header "Authorization: Bearer <token>"). Empty disables them.
	AdminToken string `yaml:"admin_token"`
	// SSHAuthorizedKeys are the public keys (authorized_keys lines) accepted for user root on
	// every node's SSH server.
	SSHAuthorizedKeys []string `yaml:"ssh_authorized_keys"`
	// SSHAuthorizedKeysFile, when set, is an authorized_keys file read again at every login,
	// so that a dev script can add a key while the sandbox runs. A missing file is no key.
	SSHAuthorizedKeysFile string `yaml:"ssh_authorized_keys_file"`
	// DataDir, when set, is where storage contents, the VM inventory, host keys and TLS
	// certificates live and persist across restarts. Empty: a temporary directory removed by
	// Close, and keys kept in memory. Not read from YAML (the -data flag sets it).
	DataDir string `yaml:"-"`
	// Clusters are the PVE clusters; each gets its own HTTPS API listener.
	Clusters []ClusterConfig `yaml:"clusters"`
}

// ClusterConfig is one PVE cluster.
type ClusterConfig struct {
	// Name is the cluster name /cluster/status reports.
	Name string `yaml:"name"`
	// Listen is the API listener address. Default "127.0.0.1:0" (a random port).
	Listen string `yaml:"listen"`
	// Tokens are the API tokens the cluster accepts.
	Tokens []TokenConfig `yaml:"tokens"`
	// Nodes are the cluster's nodes, in order.
	Nodes []NodeConfig `yaml:"nodes"`
	// Storages are the cluster's storage definitions (PVE's storage.cfg).
	Storages []StorageConfig `yaml:"storages"`
	// Pools are the resource pools that exist at start (more can be created through the API).
	Pools []PoolConfig `yaml:"pools"`
	// Roles are custom roles (name → privileges), besides PVE's built-in ones.
	Roles map[string][]string `yaml:"roles"`
}

// TokenConfig is an API token: ID "user@realm!name" and its secret.
type TokenConfig struct {
	// ID is the full token ID, e.g. "horizon@pve!ci"; UPIDs of its tasks name it as user.
	ID string `yaml:"id"`
	// Secret is the token's secret (PVE shows a UUID once, at creation).
	Secret string `yaml:"secret"`
	// Privsep is PVE's privilege separation: the token holds what its own ACLs and its user's
	// both grant. Without it the token holds its user's privileges.
	Privsep bool `yaml:"privsep"`
	// ACLs are the token's own entries (counted with Privsep only).
	ACLs []ACLConfig `yaml:"acls"`
	// UserACLs are the entries of the token's user; none means an unrestricted user (root@pam).
	// A token without Privsep, ACLs and UserACLs holds every privilege (acl.go).
	UserACLs []ACLConfig `yaml:"user_acls"`
}

// NodeConfig is one node of a cluster.
type NodeConfig struct {
	// Name is the node name (a DNS label).
	Name string `yaml:"name"`
	// SSHListen is the node's SSH/SFTP listener address. Default "127.0.0.1:0".
	SSHListen string `yaml:"ssh_listen"`
	// CPUs and MemoryMiB are what /nodes reports as maxcpu and maxmem. Defaults 8 and 32768.
	CPUs      int `yaml:"cpus"`
	MemoryMiB int `yaml:"memory_mib"`
}

// StorageConfig is one storage definition.
type StorageConfig struct {
	// Name is the storage ID, e.g. "local".
	Name string `yaml:"name"`
	// Type is the PVE plugin type: dir, nfs, cifs, cephfs (file based, with a path) or
	// lvmthin, lvm, zfspool, rbd (image only, no path).
	Type string `yaml:"type"`
	// Path is the mount point on the node for file based types, e.g. /var/lib/vz. SFTP paths
	// under it land in the storage's directory.
	Path string `yaml:"path"`
	// Content lists the content types, e.g. [iso, vztmpl, snippets, import, images].
	Content []string `yaml:"content"`
	// Shared storages are the same directory for every node of the cluster.
	Shared bool `yaml:"shared"`
	// Nodes restricts the storage to these nodes. Empty: all nodes.
	Nodes []string `yaml:"nodes"`
	// TotalGiB is the capacity reported. Default 100.
	TotalGiB int `yaml:"total_gib"`
}

// PoolConfig is a resource pool that exists at start.
type PoolConfig struct {
	// ID is the pool ID (pve-poolid; "a/b" for a nested pool).
	ID      string `yaml:"id"`
	Comment string `yaml:"comment"`
}

// DefaultConfig returns the standard sandbox: one cluster "demo" of three nodes pve1..pve3,
// the storages a fresh PVE install has (local: dir at /var/lib/vz; local-lvm: lvmthin) plus
// a shared NFS storage "shared", pools "dev" and "prod", and the API token
// "horizon@pve!ci". Tasks take 50ms. Every listener picks a random port on 127.0.0.1.
func DefaultConfig() Config {
	return Config{
		TaskDuration: 50 * time.Millisecond,
		VMSSHPort:    22,
		AdminToken:   "sandbox-admin",
		Clusters: []ClusterConfig{{
			Name: "demo",
			Tokens: []TokenConfig{{
				ID:     "horizon@pve!ci",
				Secret: "5b2f0c7e-3c1a-4a8e-9d77-1f4a2b6c8d90",
			}},
			Nodes: []NodeConfig{{Name: "pve1"}, {Name: "pve2"}, {Name: "pve3"}},
			Storages: []StorageConfig{
				{Name: "local", Type: "dir", Path: "/var/lib/vz", Content: []string{"iso", "vztmpl", "backup", "snippets", "import"}},
				{Name: "local-lvm", Type: "lvmthin", Content: []string{"images", "rootdir"}},
				{Name: "shared", Type: "nfs", Path: "/mnt/pve/shared", Content: []string{"images", "iso", "snippets", "import"}, Shared: true},
			},
			Pools: []PoolConfig{{ID: "dev", Comment: "Development"}, {ID: "prod", Comment: "Production"}},
		}},
	}
}

// LoadConfig reads a YAML config file and fills defaults. Unknown keys are errors.
func LoadConfig(path string) (Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return Config{}, fmt.Errorf("open config: %w", err)
	}
	defer f.Close() // read-only: a close error loses nothing

	cfg := Config{TaskDuration: -1, VMSSHPort: -1}
	dec := yaml.NewDecoder(f)
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil {
		return Config{}, fmt.Errorf("parse config %s: %w", path, err)
	}
	if cfg.TaskDuration < 0 {
		cfg.TaskDuration = 50 * time.Millisecond
	}
	if cfg.VMSSHPort < 0 {
		cfg.VMSSHPort = 22
	}
	return cfg, nil
}

var (
	nodeNameRE  = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?$`)
	storageIDRE = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9\-_.]*[a-zA-Z0-9]$`)
	tokenIDRE   = regexp.MustCompile(`^[^\s:@!]+@[^\s:@!]+![A-Za-z][A-Za-z0-9.\-_]+$`)
)

// fileStorageTypes have a path and hold files; the others hold only VM images.
var fileStorageTypes = []string{"dir", "nfs", "cifs", "cephfs"}

var imageStorageTypes = []string{"lvmthin", "lvm", "zfspool", "rbd"}

// validate reports every problem of the config at once and fills per-item defaults.
func (cfg *Config) validate() error {
	var errs []error
	if len(cfg.Clusters) == 0 {
		errs = append(errs, errors.New("no clusters"))
	}
	if cfg.VMSSHPort < 0 || cfg.VMSSHPort > 65535 {
		errs = append(errs, fmt.Errorf("vm_ssh_port %d out of range", cfg.VMSSHPort))
	}
	for _, k := range cfg.SSHAuthorizedKeys {
		if _, err := parseAuthorizedKey(k); err != nil {
			errs = append(errs, fmt.Errorf("ssh_authorized_keys: %w", err))
		}
	}
	names := map[string]bool{}
	for i := range cfg.Clusters {
		c := &cfg.Clusters[i]
		if c.Name == "" || names[c.Name] {
			errs = append(errs, fmt.Errorf("cluster %d: missing or duplicate name %q", i, c.Name))
		}
		names[c.Name] = true
		if c.Listen == "" {
			c.Listen = "127.0.0.1:0"
		}
		errs = append(errs, c.validate()...)
	}
	return errors.Join(errs...)
}

func (c *ClusterConfig) validate() []error {
	var errs []error
	where := "cluster " + c.Name
	if len(c.Nodes) == 0 {
		errs = append(errs, fmt.Errorf("%s: no nodes", where))
	}
	if len(c.Tokens) == 0 {
		errs = append(errs, fmt.Errorf("%s: no API tokens", where))
	}
	for _, t := range c.Tokens {
		if !tokenIDRE.MatchString(t.ID) || t.Secret == "" {
			errs = append(errs, fmt.Errorf("%s: token %q: want id user@realm!name and a secret", where, t.ID))
		}
		for _, a := range append(slices.Clone(t.ACLs), t.UserACLs...) {
			if _, builtin := builtinRoles[a.Role]; !builtin && c.Roles[a.Role] == nil {
				errs = append(errs, fmt.Errorf("%s: token %q: ACL on %s names role %q, which does not exist", where, t.ID, a.Path, a.Role))
			}
			if !strings.HasPrefix(a.Path, "/") {
				errs = append(errs, fmt.Errorf("%s: token %q: ACL path %q must start with /", where, t.ID, a.Path))
			}
		}
	}
	nodes := map[string]bool{}
	for i := range c.Nodes {
		n := &c.Nodes[i]
		if !nodeNameRE.MatchString(n.Name) || nodes[n.Name] {
			errs = append(errs, fmt.Errorf("%s: node %d: invalid or duplicate name %q", where, i, n.Name))
		}
		nodes[n.Name] = true
		if n.SSHListen == "" {
			n.SSHListen = "127.0.0.1:0"
		}
		if n.CPUs == 0 {
			n.CPUs = 8
		}
		if n.MemoryMiB == 0 {
			n.MemoryMiB = 32768
		}
	}
	storages := map[string]bool{}
	for i := range c.Storages {
		s := &c.Storages[i]
		if !storageIDRE.MatchString(s.Name) || storages[s.Name] {
			errs = append(errs, fmt.Errorf("%s: storage %d: invalid or duplicate name %q", where, i, s.Name))
		}
		storages[s.Name] = true
		switch {
		case slices.Contains(fileStorageTypes, s.Type):
			if !strings.HasPrefix(s.Path, "/") {
				errs = append(errs, fmt.Errorf("%s: storage %s: type %s needs an absolute path", where, s.Name, s.Type))
			}
		case slices.Contains(imageStorageTypes, s.Type):
			if s.Path != "" {
				errs = append(errs, fmt.Errorf("%s: storage %s: type %s has no path", where, s.Name, s.Type))
			}
			for _, ct := range s.Content {
				if ct != "images" && ct != "rootdir" {
					errs = append(errs, fmt.Errorf("%s: storage %s: type %s cannot hold %s", where, s.Name, s.Type, ct))
				}
			}
		default:
			errs = append(errs, fmt.Errorf("%s: storage %s: unsupported type %q", where, s.Name, s.Type))
		}
		for _, ct := range s.Content {
			if !slices.Contains(contentTypes, ct) {
				errs = append(errs, fmt.Errorf("%s: storage %s: unknown content type %q", where, s.Name, ct))
			}
		}
		for _, n := range s.Nodes {
			if !nodes[n] {
				errs = append(errs, fmt.Errorf("%s: storage %s: unknown node %q", where, s.Name, n))
			}
		}
		if s.TotalGiB == 0 {
			s.TotalGiB = 100
		}
	}
	for _, p := range c.Pools {
		if !poolIDRE.MatchString(p.ID) {
			errs = append(errs, fmt.Errorf("%s: invalid pool id %q", where, p.ID))
		}
	}
	return errs
}
