package proxmoxservers

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"horizon/shared/horizon"
	"horizon/shared/proxmox"
	"horizon/shared/secrets"
	"horizon/shared/sshx"
)

// connectTimeout bounds everything a registration does on the network.
const connectTimeout = 30 * time.Second

// settings is a server's connection configuration, plaintext, as a request gives it (create) or
// as the stored server and a patch combine (update).
type settings struct {
	Name           string
	APIURL         string
	TokenID        string
	TokenSecret    secrets.Value
	TLSFingerprint string
	CACert         string
	SSHUser        string
	SSHPrivateKey  secrets.Value
	// Nodes are the SSH settings per node; ssh of nodes not listed is kept from Known.
	Nodes []NodeRequest
	// Known are the nodes already stored (update, refresh), whose SSH settings carry over.
	Known []horizon.ProxmoxNode
}

// NodeRequest is how Horizon reaches one node over SSH.
type NodeRequest struct {
	Name                  string `json:"name"`
	SSHAddress            string `json:"ssh_address"`
	SSHHostKeyFingerprint string `json:"ssh_host_key_fingerprint"`
	TrustOnFirstUse       bool   `json:"trust_on_first_use"`
}

var (
	tokenIDPattern = regexp.MustCompile(`^[A-Za-z0-9._@-]+@[A-Za-z0-9._-]+![A-Za-z0-9._-]+$`)
	sshUserPattern = regexp.MustCompile(`^[a-z_][a-z0-9_-]{0,31}$`)
)

// check validates the settings' syntax, recording every problem; it touches no network.
func (s *settings) check(p *horizon.Problems) (ssh.Signer, *proxmox.Client) {
	horizon.CheckName(p, "name", s.Name, horizon.MaxNameLength)
	if u, err := url.Parse(s.APIURL); err != nil || u.Scheme != "https" || u.Host == "" || (u.Path != "" && u.Path != "/") {
		p.Add("api_url", "must be the cluster's API endpoint, e.g. https://pve1.example.org:8006")
	}
	if !tokenIDPattern.MatchString(s.TokenID) {
		p.Add("token_id", "must be USER@REALM!TOKENID, e.g. horizon@pve!horizon")
	}
	if s.TokenSecret == "" {
		p.Add("token_secret", "is required")
	}
	if s.TLSFingerprint == "" && s.CACert == "" {
		p.Add("tls_fingerprint", "is required unless ca_cert is given: TLS is always verified")
	}
	if s.TLSFingerprint != "" {
		norm, err := proxmox.NormalizeFingerprint(s.TLSFingerprint)
		if err != nil {
			p.Add("tls_fingerprint", "%s", err.Error())
		}
		s.TLSFingerprint = norm
	}
	if !sshUserPattern.MatchString(s.SSHUser) {
		p.Add("ssh_user", "must be a Unix user name, e.g. root")
	}
	signer, err := ssh.ParsePrivateKey([]byte(s.SSHPrivateKey.Reveal()))
	if err != nil {
		p.Add("ssh_private_key", "must be an unencrypted private key in OpenSSH or PEM format")
	}
	seen := map[string]bool{}
	for i, n := range s.Nodes {
		f := fmt.Sprintf("nodes[%d]", i)
		if n.Name == "" {
			p.Add(f+".name", "is required")
		} else if seen[n.Name] {
			p.Add(f+".name", "is listed twice")
		}
		seen[n.Name] = true
		if _, port, err := net.SplitHostPort(n.SSHAddress); err != nil || port == "" {
			p.Add(f+".ssh_address", "must be host:port, e.g. 10.0.0.11:22")
		}
		switch {
		case n.TrustOnFirstUse && n.SSHHostKeyFingerprint != "":
			p.Add(f+".trust_on_first_use", "cannot be combined with ssh_host_key_fingerprint")
		case !n.TrustOnFirstUse && !strings.HasPrefix(n.SSHHostKeyFingerprint, "SHA256:"):
			p.Add(f+".ssh_host_key_fingerprint", "must be the node's SHA256 host key fingerprint (ssh-keygen -lf), or set trust_on_first_use")
		}
	}
	if !p.Empty() {
		return nil, nil
	}
	client, err := proxmox.New(proxmox.Config{URL: s.APIURL, TokenID: s.TokenID, TokenSecret: s.TokenSecret,
		Fingerprint: s.TLSFingerprint, CACert: []byte(s.CACert), Timeout: 15 * time.Second})
	if err != nil {
		p.Add("ca_cert", "%s", strings.TrimPrefix(err.Error(), "proxmox: "))
		return nil, nil
	}
	return signer, client
}

// connect checks the settings against the real cluster and returns the server to store, its
// secrets sealed. A reason the cluster gives is a field problem; only Horizon's own failures
// are errors.
func connect(ctx context.Context, box *secrets.Box, s settings) (horizon.ProxmoxServer, error) {
	var p horizon.Problems
	signer, client := s.check(&p)
	if err := p.Err(); err != nil {
		return horizon.ProxmoxServer{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	inv, err := client.Discover(ctx)
	if err != nil {
		return horizon.ProxmoxServer{}, apiProblem(err)
	}
	srv := horizon.ProxmoxServer{Name: s.Name, APIURL: strings.TrimSuffix(s.APIURL, "/"), TokenID: s.TokenID,
		TokenSecret: box.SealString(horizon.PurposeProxmoxTokenSecret, s.TokenSecret.Reveal()), TLSFingerprint: s.TLSFingerprint, CACert: s.CACert,
		SSHUser: s.SSHUser, SSHPrivateKey: box.SealString(horizon.PurposeProxmoxSSHPrivateKey, s.SSHPrivateKey.Reveal()),
		SSHPublicKey: strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey()))),
		PVEVersion:   inv.Version, ClusterName: inv.Cluster}
	fromInventory(&srv, inv, s.Known)

	var names []string
	for _, n := range inv.Nodes {
		names = append(names, n.Name)
	}
	for i, n := range s.Nodes {
		f := fmt.Sprintf("nodes[%d]", i)
		node := srv.Node(n.Name)
		if node == nil {
			p.Add(f+".name", "is not a node of this cluster (its nodes: %s)", strings.Join(names, ", "))
			continue
		}
		fingerprint, source, ok := verifyNodeSSH(ctx, &p, f, node.Online, n, s.SSHUser, signer)
		if !ok {
			continue
		}
		addr := n.SSHAddress
		node.SSHAddress, node.SSHHostKey, node.HostKeySource = &addr, &fingerprint, &source
	}
	return srv, p.Err()
}

// verifyNodeSSH dials a node with its pinned (or, on request, just scanned) host key and
// Horizon's key, recording why it fails.
func verifyNodeSSH(ctx context.Context, p *horizon.Problems, field string, online bool, n NodeRequest, user string, signer ssh.Signer) (string, string, bool) {
	fingerprint, source := n.SSHHostKeyFingerprint, horizon.HostKeyPinned
	if !online {
		if n.TrustOnFirstUse {
			p.Add(field+".trust_on_first_use", "the node is offline: its host key cannot be read now")
			return "", "", false
		}
		return fingerprint, source, true // checked when the node is back (refresh)
	}
	if n.TrustOnFirstUse {
		key, err := sshx.ScanHostKey(ctx, n.SSHAddress)
		if err != nil {
			p.Add(field+".ssh_address", "no SSH server answers there")
			return "", "", false
		}
		fingerprint, source = ssh.FingerprintSHA256(key), horizon.HostKeyTrustOnFirstUse
	}
	c, err := sshx.Dial(ctx, sshx.Config{Addr: n.SSHAddress, User: user, Signer: signer, HostKey: fingerprint})
	var hk *sshx.HostKeyError
	switch {
	case err == nil:
		_ = c.Close() // a probe connection
		return fingerprint, source, true
	case errors.As(err, &hk):
		p.Add(field+".ssh_host_key_fingerprint", "the node presented %s, not the pinned %s", hk.Got, hk.Want)
	case errors.Is(err, sshx.ErrAuth):
		p.Add("ssh_private_key", "node %s refused it for user %s; install ssh_public_key in its authorized_keys", n.Name, user)
	default:
		p.Add(field+".ssh_address", "no SSH server answers there")
	}
	return "", "", false
}

// apiProblem explains a failed discovery by the field that is probably wrong.
func apiProblem(err error) error {
	var pe *proxmox.Error
	detail := err.Error()
	if errors.As(err, &pe) {
		detail = pe.Message
	}
	switch {
	case errors.Is(err, proxmox.ErrTLS):
		return horizon.Invalid("tls_fingerprint", "the server's certificate is not the pinned or trusted one (%s)", detail)
	case errors.Is(err, proxmox.ErrAuth):
		return horizon.Invalid("token_secret", "the cluster refused the API token (wrong token id or secret, or missing permissions)")
	case errors.Is(err, proxmox.ErrUnreachable), errors.Is(err, context.DeadlineExceeded):
		return horizon.Invalid("api_url", "nothing answers there")
	}
	return horizon.Invalid("api_url", "the cluster answered with an error: %s", detail)
}

// fromInventory fills srv's inventory from a discovery, carrying over the SSH settings of known
// nodes.
func fromInventory(srv *horizon.ProxmoxServer, inv proxmox.Inventory, known []horizon.ProxmoxNode) {
	srv.PVEVersion, srv.ClusterName = inv.Version, inv.Cluster
	srv.Nodes, srv.Storages, srv.Pools, srv.ISOFiles = nil, nil, nil, nil
	for _, n := range inv.Nodes {
		node := horizon.ProxmoxNode{Name: n.Name, Online: n.Online, CPUs: n.CPUs, Memory: int64(n.Memory), TokenLacks: n.Lacks}
		for _, k := range known {
			if k.Name == n.Name {
				node.SSHAddress, node.SSHHostKey, node.HostKeySource = k.SSHAddress, k.SSHHostKey, k.HostKeySource
			}
		}
		srv.Nodes = append(srv.Nodes, node)
	}
	for _, s := range inv.Storages {
		srv.Storages = append(srv.Storages, horizon.ProxmoxStorage{Name: s.Name, Type: s.Type, Content: s.Content, Shared: s.Shared, Path: s.Path,
			Nodes: s.Nodes, TokenLacks: s.Lacks})
	}
	for _, pl := range inv.Pools {
		srv.Pools = append(srv.Pools, horizon.ProxmoxPool{Pool: pl.ID, Comment: pl.Comment, TokenLacks: pl.Lacks})
	}
	for _, f := range inv.ISOs {
		srv.ISOFiles = append(srv.ISOFiles, horizon.ProxmoxISOFile{VolID: f.VolID, Storage: f.Storage, Size: int64(f.Size), Nodes: f.Nodes})
	}
}
