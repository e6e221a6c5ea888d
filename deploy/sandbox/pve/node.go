package pve

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
)

// Node is one cluster node: its online state and its SSH/SFTP server.
type Node struct {
	c    *Cluster
	cfg  NodeConfig
	boot time.Time // for uptime

	mu      sync.Mutex
	online  bool
	hostKey ssh.Signer
	addr    string // bound SSH address, kept so that going online again reuses it
	ssh     *sshServer
	uploads uploadGate
}

func newNode(c *Cluster, cfg NodeConfig) *Node {
	n := &Node{c: c, cfg: cfg, boot: time.Now(), online: true}
	n.uploads.node = cfg.Name
	n.uploads.minDuration = c.sb.cfg.UploadMinDuration
	n.ssh = &sshServer{log: c.sb.log, config: n.sshConfig, session: n.serveSession}
	return n
}

// Name is the node's name.
func (n *Node) Name() string { return n.cfg.Name }

// Online reports whether the node is up (see Cluster.SetNodeOnline).
func (n *Node) Online() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.online
}

// SSHAddr is the node's SSH/SFTP address, "127.0.0.1:PORT".
func (n *Node) SSHAddr() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.addr
}

// SSHConnections is how many SSH connections to the node are open, past their handshake.
func (n *Node) SSHConnections() int { return n.ssh.live() }

// DropSSHConnections closes every open SSH connection to the node, as a network blip or an
// idle timeout would; the node keeps accepting new ones.
func (n *Node) DropSSHConnections() { n.ssh.drop() }

// HostKeyFingerprint is the SHA256 fingerprint of the node's current host key, as
// ssh.FingerprintSHA256 prints it ("SHA256:…").
func (n *Node) HostKeyFingerprint() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return ssh.FingerprintSHA256(n.hostKey.PublicKey())
}

// HostKey is the node's current public host key.
func (n *Node) HostKey() ssh.PublicKey {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.hostKey.PublicKey()
}

func (n *Node) dir() string     { return filepath.Join(n.c.dir, "nodes", n.cfg.Name) }
func (n *Node) rootDir() string { return filepath.Join(n.dir(), "root") }

func (n *Node) hostKeyPath() string {
	if d := n.c.persistDir(); d != "" {
		return filepath.Join(d, "nodes", n.cfg.Name, "ssh_host_ed25519_key")
	}
	return ""
}

// start loads (or creates, once) the host key and opens the SSH listener.
func (n *Node) start(ctx context.Context) error {
	key, err := loadOrCreateHostKey(n.hostKeyPath())
	if err != nil {
		return err
	}
	n.mu.Lock()
	n.hostKey = key
	n.mu.Unlock()
	if err := n.ssh.listen(ctx, n.cfg.SSHListen); err != nil {
		return fmt.Errorf("listen SSH: %w", err)
	}
	n.mu.Lock()
	n.addr = n.ssh.addr()
	n.mu.Unlock()
	return nil
}

func (n *Node) stop() { n.ssh.stop() }

func (n *Node) setOnline(online bool) error {
	n.mu.Lock()
	was, addr := n.online, n.addr
	n.online = online
	n.mu.Unlock()
	switch {
	case was && !online:
		n.ssh.stop()
	case !was && online:
		if err := n.ssh.listen(context.Background(), addr); err != nil {
			return fmt.Errorf("node %s: listen SSH again on %s: %w", n.cfg.Name, addr, err)
		}
	}
	return nil
}

func (n *Node) rotateHostKey() (string, error) {
	key, pemBytes, err := newHostKey()
	if err != nil {
		return "", err
	}
	if p := n.hostKeyPath(); p != "" {
		if err := writeFileAtomic(p, pemBytes, 0o600); err != nil {
			return "", err
		}
	}
	n.mu.Lock()
	n.hostKey = key
	n.mu.Unlock()
	return ssh.FingerprintSHA256(key.PublicKey()), nil
}

// loadOrCreateHostKey reads the host key at path, creating it on first use. An empty path
// keeps a fresh key in memory.
func loadOrCreateHostKey(path string) (ssh.Signer, error) {
	if path != "" {
		data, err := os.ReadFile(path)
		if err == nil {
			return ssh.ParsePrivateKey(data)
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	key, pemBytes, err := newHostKey()
	if err != nil {
		return nil, err
	}
	if path != "" {
		if err := writeFileAtomic(path, pemBytes, 0o600); err != nil {
			return nil, err
		}
	}
	return key, nil
}

// resolve maps an SFTP path on the node to disk: a path under a file storage's mount point
// lands in that storage's directory (the same one on every node for a shared storage),
// anything else in the node's own root directory.
func (n *Node) resolve(p string) string {
	for i := range n.c.cfg.Storages {
		s := &n.c.cfg.Storages[i]
		if s.Path == "" || !storageOnNode(s, n.cfg.Name) {
			continue
		}
		if rest, ok := strings.CutPrefix(p, s.Path); ok && (rest == "" || rest[0] == '/') {
			return filepath.Join(n.c.storageDir(s, n.cfg.Name), filepath.FromSlash(rest))
		}
	}
	return filepath.Join(n.rootDir(), filepath.FromSlash(p))
}

// Upload is one file written over the node's SFTP: opened at Start, closed at End (zero
// while still open).
type Upload struct {
	Path  string
	Start time.Time
	End   time.Time
}

// Uploads returns every upload the node accepted, in order.
func (n *Node) Uploads() []Upload {
	n.uploads.mu.Lock()
	defer n.uploads.mu.Unlock()
	return append([]Upload(nil), n.uploads.done...)
}

// RejectedUploads counts the uploads refused because another was in progress.
func (n *Node) RejectedUploads() int {
	n.uploads.mu.Lock()
	defer n.uploads.mu.Unlock()
	return n.uploads.rejected
}

// uploadGate enforces one open-for-write file per node at a time: PVE itself does not, but
// Horizon promises one build per node, and a second concurrent upload is how a broken
// promise shows.
type uploadGate struct {
	node        string
	minDuration time.Duration

	mu       sync.Mutex
	active   bool
	done     []Upload
	rejected int
}

func (g *uploadGate) begin(p string) (func(), error) {
	g.mu.Lock()
	if g.active {
		g.rejected++
		g.mu.Unlock()
		return nil, fmt.Errorf("sandbox: another upload is in progress on node %s — one build per node", g.node)
	}
	g.active = true
	g.done = append(g.done, Upload{Path: p, Start: time.Now()})
	i := len(g.done) - 1
	g.mu.Unlock()
	return func() {
		g.mu.Lock()
		start := g.done[i].Start
		g.mu.Unlock()
		// Holding the file open a little longer widens the window in which a concurrent
		// upload would be caught.
		if wait := time.Until(start.Add(g.minDuration)); wait > 0 {
			time.Sleep(wait)
		}
		g.mu.Lock()
		g.done[i].End = time.Now()
		g.active = false
		g.mu.Unlock()
	}, nil
}
