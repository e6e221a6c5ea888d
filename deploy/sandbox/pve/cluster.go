package pve

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// Cluster is one sandboxed PVE cluster: its API listener, nodes, storages, pools, VMs and
// tasks. All state is behind one mutex; handlers hold it for the whole of their bookkeeping,
// never while waiting for I/O.
type Cluster struct {
	sb     *Sandbox
	cfg    ClusterConfig
	dir    string // this cluster's part of the data directory
	routes []route
	certs  *certs
	ln     net.Listener
	srv    *http.Server

	mu      sync.Mutex
	nodes   []*Node
	vms     map[int]*vm
	pools   map[string]*pool
	volumes map[string]*volume // image volumes (disks), by volume ID
	tasks   []*task            // oldest first
	nextPID int
	loaded  bool // the inventory was loaded, so saving it loses nothing
}

func newCluster(sb *Sandbox, cfg ClusterConfig) *Cluster {
	c := &Cluster{
		sb:      sb,
		cfg:     cfg,
		dir:     filepath.Join(sb.dataDir, cfg.Name),
		vms:     map[int]*vm{},
		pools:   map[string]*pool{},
		volumes: map[string]*volume{},
		nextPID: 4000 + len(sb.clusters)*1000,
	}
	for _, nc := range cfg.Nodes {
		c.nodes = append(c.nodes, newNode(c, nc))
	}
	for _, pc := range cfg.Pools {
		c.pools[pc.ID] = &pool{ID: pc.ID, Comment: pc.Comment}
	}
	c.routes = c.apiRoutes()
	return c
}

// start prepares directories, loads persisted state and opens every listener.
func (c *Cluster) start(ctx context.Context) error {
	if err := c.makeDirs(); err != nil {
		return err
	}
	if err := c.load(); err != nil {
		return err
	}
	c.loaded = true
	var err error
	if c.certs, err = loadOrCreateCerts(c.persistDir(), c.nodeNames()); err != nil {
		return err
	}
	var lc net.ListenConfig
	c.ln, err = lc.Listen(ctx, "tcp", c.cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen API: %w", err)
	}
	c.srv = &http.Server{
		Handler:           c,
		ReadHeaderTimeout: 10 * time.Second,
		// pveproxy speaks HTTP/1.1 only; an empty map also keeps net/http from offering h2,
		// which would break the hijacking writeError relies on.
		TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){},
		TLSConfig:    &tls.Config{GetCertificate: c.certs.get, MinVersion: tls.VersionTLS12},
	}
	go func() {
		// ServeTLS returns ErrServerClosed on Close; any other error ends the listener,
		// which clients see as refused connections.
		if err := c.srv.ServeTLS(c.ln, "", ""); !errors.Is(err, http.ErrServerClosed) {
			c.sb.log.Error("sandbox: API listener stopped", "cluster", c.cfg.Name, "error", err)
		}
	}()
	for _, n := range c.nodes {
		if err := n.start(ctx); err != nil {
			return fmt.Errorf("node %s: %w", n.cfg.Name, err)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, v := range c.vms {
		if v.Running {
			if err := c.startVMSSH(v); err != nil {
				c.sb.log.Warn("sandbox: VM SSH not restarted", "vmid", v.VMID, "error", err)
			}
		}
	}
	return nil
}

func (c *Cluster) stop() error {
	var errs []error
	if c.srv != nil {
		errs = append(errs, c.srv.Close())
	} else if c.ln != nil {
		errs = append(errs, c.ln.Close())
	}
	for _, n := range c.nodes {
		n.stop()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, v := range c.vms {
		c.stopVMSSH(v)
	}
	return errors.Join(errs...)
}

func (c *Cluster) makeDirs() error {
	dirs := []string{filepath.Join(c.dir, "vms")}
	for _, n := range c.nodes {
		for _, d := range []string{"/tmp", "/root", "/var/tmp"} {
			dirs = append(dirs, filepath.Join(n.rootDir(), d))
		}
		for _, s := range c.cfg.Storages {
			if s.Path == "" {
				continue
			}
			// The mount point exists in the node's root so that SFTP clients can walk to it,
			// and, as PVE's dir plugin does on activation, each content type has its directory.
			dirs = append(dirs, filepath.Join(n.rootDir(), s.Path))
			for _, ct := range s.Content {
				if sub, ok := contentDirs[ct]; ok {
					dirs = append(dirs, filepath.Join(c.storageDir(&s, n.cfg.Name), sub))
				}
			}
		}
	}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("create %s: %w", d, err)
		}
	}
	return nil
}

// persistDir is where keys and certificates are kept, "" when they live in memory only.
func (c *Cluster) persistDir() string {
	if c.sb.tempData {
		return ""
	}
	return c.dir
}

func (c *Cluster) nodeNames() []string {
	names := make([]string, 0, len(c.nodes))
	for _, n := range c.nodes {
		names = append(names, n.cfg.Name)
	}
	return names
}

// Name is the cluster's name.
func (c *Cluster) Name() string { return c.cfg.Name }

// URL is the API listener's base URL, e.g. "https://127.0.0.1:34567"; the API is under
// URL()+"/api2/json".
func (c *Cluster) URL() string { return "https://" + c.ln.Addr().String() }

// CertFingerprint is the SHA-256 fingerprint of the API certificate (the leaf's DER), in
// PVE's form: uppercase hex pairs joined by colons.
func (c *Cluster) CertFingerprint() string { return c.certs.fingerprint() }

// CACertPEM is the PEM of the CA that signed the API certificate (PVE's pve-root-ca.pem).
func (c *Cluster) CACertPEM() []byte { return c.certs.caPEM() }

// RotateCert replaces the API certificate with a new key and certificate signed by the same
// CA (as renewing a node certificate does) and returns the new fingerprint. Clients that
// pin the old fingerprint fail; clients that trust the CA do not.
func (c *Cluster) RotateCert() (string, error) { return c.certs.rotate() }

// TokenID is the first configured API token's ID, e.g. "horizon@pve!ci".
func (c *Cluster) TokenID() string { return c.cfg.Tokens[0].ID }

// TokenSecret is the first configured API token's secret.
func (c *Cluster) TokenSecret() string { return c.cfg.Tokens[0].Secret }

// Node returns the named node, or nil.
func (c *Cluster) Node(name string) *Node {
	for _, n := range c.nodes {
		if n.cfg.Name == name {
			return n
		}
	}
	return nil
}

// Nodes returns the nodes in config order.
func (c *Cluster) Nodes() []*Node { return append([]*Node(nil), c.nodes...) }

// SetNodeOnline takes a node offline or brings it back. Offline, /nodes reports it so, API
// calls under /nodes/{node}/ fail with 595 as for an unreachable node, and its SSH listener
// refuses connections (open sessions are cut).
func (c *Cluster) SetNodeOnline(name string, online bool) error {
	n := c.Node(name)
	if n == nil {
		return fmt.Errorf("no such node %q", name)
	}
	return n.setOnline(online)
}

// RotateHostKey gives the node a new SSH host key and returns its fingerprint
// ("SHA256:…"). New connections see the new key.
func (c *Cluster) RotateHostKey(name string) (string, error) {
	n := c.Node(name)
	if n == nil {
		return "", fmt.Errorf("no such node %q", name)
	}
	return n.rotateHostKey()
}

// VMDir is the directory where SSH commands of the VM run (their working directory and
// HOME); SFTP on the VM is rooted there.
func (c *Cluster) VMDir(vmid int) string {
	return filepath.Join(c.dir, "vms", fmt.Sprint(vmid))
}

// VM is a snapshot of a VM for assertions.
type VM struct {
	VMID     int
	Node     string
	Name     string
	Status   string // running or stopped
	Template bool
	Pool     string
	Tags     []string
	// Config is the VM's configuration as PVE stores it (the values of GET …/config).
	Config map[string]string
}

// VMs returns every VM of the cluster, by VMID.
func (c *Cluster) VMs() []VM {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]VM, 0, len(c.vms))
	for _, v := range c.vms {
		out = append(out, VM{
			VMID:     v.VMID,
			Node:     v.Node,
			Name:     v.Conf["name"],
			Status:   v.status(),
			Template: v.Conf["template"] == "1",
			Pool:     c.poolOf(v.VMID),
			Tags:     splitTags(v.Conf["tags"]),
			Config:   copyMap(v.Conf),
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].VMID < out[j].VMID })
	return out
}

// VMSSHAddr is the address of the running VM's SSH server ("" when it has none).
func (c *Cluster) VMSSHAddr(vmid int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v := c.vms[vmid]; v != nil && v.ssh != nil {
		return v.ssh.addr()
	}
	return ""
}

// Task is a snapshot of a task for assertions.
type Task struct {
	UPID       string
	Node       string
	Type       string
	ID         string
	User       string
	Status     string // running or stopped
	ExitStatus string // "OK" or the error; "" while running
	Log        []string
}

// Tasks returns every task of the cluster, oldest first.
func (c *Cluster) Tasks() []Task {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Task, 0, len(c.tasks))
	for _, t := range c.tasks {
		out = append(out, t.snapshot())
	}
	return out
}

// checkNode fails a call under /nodes/{node}/ for an unknown or offline node.
func (c *Cluster) checkNode(name string) error {
	n := c.Node(name)
	if n == nil {
		return failf("no such cluster node '%s'", name)
	}
	if !n.Online() {
		// pveproxy could not forward the call to the node.
		return &apiError{status: 595, message: "No route to host", noBody: true}
	}
	return nil
}

func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// volumeStorage returns the storage part of a volume ID ("local" of "local:iso/x.iso").
func volumeStorage(volid string) string {
	s, _, _ := strings.Cut(volid, ":")
	return s
}
