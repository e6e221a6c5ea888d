// Package pvetest starts the Proxmox VE sandbox for other packages' tests, with an SSH key that
// its nodes accept, ready to register in Horizon.
package pvetest

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"horizon/deploy/sandbox/pve"
)

// Sandbox is a running sandbox and the private key its nodes accept for root.
type Sandbox struct {
	*pve.Sandbox
	// NodeKeyPEM is an OpenSSH private key the nodes accept.
	NodeKeyPEM string
	NodeSigner ssh.Signer
}

// Start runs the default demo sandbox (one cluster "demo" of three nodes, random ports), after
// mutate adjusts its configuration (may be nil), and closes it on cleanup.
func Start(t testing.TB, mutate func(*pve.Config)) *Sandbox {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "horizon test")
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	cfg := pve.DefaultConfig()
	cfg.SSHAuthorizedKeys = append(cfg.SSHAuthorizedKeys, strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey()))))
	if mutate != nil {
		mutate(&cfg)
	}
	sb, err := pve.Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("start sandbox: %v", err)
	}
	t.Cleanup(func() { _ = sb.Close() })
	return &Sandbox{Sandbox: sb, NodeKeyPEM: string(pem.EncodeToMemory(block)), NodeSigner: signer}
}

// Registration is the body of POST /v1/proxmox-servers for a cluster of the sandbox, every node
// with its pinned host key.
func (s *Sandbox) Registration(cluster, name string) map[string]any {
	c := s.Cluster(cluster)
	var nodes []map[string]any
	for _, n := range c.Nodes() {
		nodes = append(nodes, map[string]any{"name": n.Name(), "ssh_address": n.SSHAddr(), "ssh_host_key_fingerprint": n.HostKeyFingerprint()})
	}
	return map[string]any{"name": name, "api_url": c.URL(), "token_id": c.TokenID(), "token_secret": c.TokenSecret(),
		"tls_fingerprint": c.CertFingerprint(), "ssh_user": "root", "ssh_private_key": s.NodeKeyPEM, "nodes": nodes}
}
