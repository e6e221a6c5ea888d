package steps

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"horizon/shared/cloudinit"
	"horizon/shared/horizon"
	"horizon/shared/proxmox"
	"horizon/shared/sshx"
	"horizon/shared/store"
	"horizon/workers/attempt"
)

// variables are the candidate Terraform variables of the execution: its effective parameters
// and inputs, and the horizon_* values of the job contract (deploy/examples/README.md). The
// runner writes only those the module declares.
func (h *Handler) variables(ctx context.Context, w *stepWork) (map[string]any, error) {
	vars := map[string]any{}
	for k, v := range w.effective.Parameters {
		vars[k] = v
	}
	for k, v := range w.effective.Inputs {
		vars[k] = v
	}
	vars["horizon_name"] = vmName(w)
	vars["horizon_tags"] = horizon.VMTags(w.stack)
	if !w.machine() {
		return vars, nil
	}
	cfg := w.exec.Config
	vars["horizon_node"] = cfg.Node
	vars["horizon_pool"] = cfg.Pool
	if w.exec.VMID != nil {
		vars["horizon_vmid"] = *w.exec.VMID
	}
	if cfg.StartupOrder != nil {
		vars["horizon_startup_order"] = *cfg.StartupOrder
	}
	if w.address != nil && w.network != nil {
		dns := make([]string, len(w.network.DNS))
		for i, d := range w.network.DNS {
			dns[i] = d.String()
		}
		vars["horizon_address"] = map[string]any{"ip": w.address.IP.String(), "prefix": w.network.CIDR.Bits(),
			"gateway": w.network.Gateway.String(), "dns": dns, "name": w.address.Name}
	}
	if w.userKey != nil {
		vars["horizon_ssh_public_key"] = w.userKey.PublicKey
	}
	if a, ok := isoArtifact(w); ok {
		vars["horizon_iso"] = a.Value
		if w.isoCopy != "" {
			vars["horizon_iso"] = w.isoCopy // the node's copy of the image (isoOnNode)
		}
	}
	storage, err := snippetStorage(w)
	if err != nil {
		return nil, err
	}
	volid, err := cloudinit.VolumeID(storage.Name, snippetName(w))
	if err != nil {
		return nil, err
	}
	vars["horizon_cloud_init"] = volid
	return vars, nil
}

// vmName is the execution's machine name.
func vmName(w *stepWork) string { return w.exec.MachineName(w.stack.Name) }

// snippetName names the execution's cloud-init snippet by the execution's id: unique by
// construction, so no other machine's build (another stack, another team) can ever read or
// overwrite it. A prefix of the stack's UUIDv7 is not enough: its first 8 hex digits are a
// timestamp that changes only every 65 s.
func snippetName(w *stepWork) string {
	return cloudinit.SnippetName("horizon", w.exec.ID.String())
}

// snippetStorage picks the storage of the node that takes snippets: a node-local one when
// there is one (the snippet belongs to one VM), else a shared one.
func snippetStorage(w *stepWork) (horizon.ProxmoxStorage, error) {
	var shared *horizon.ProxmoxStorage
	for i, s := range w.server.Storages {
		if !contains(s.Content, "snippets") || !contains(s.Nodes, w.node.Name) || s.Path == "" {
			continue
		}
		if !s.Shared {
			return s, nil
		}
		shared = &w.server.Storages[i]
	}
	if shared != nil {
		return *shared, nil
	}
	return horizon.ProxmoxStorage{}, fmt.Errorf("node %s has no storage for snippets (content \"snippets\"); cloud-init cannot be uploaded", w.node.Name)
}

// snippet is a machine's cloud-init user-data ready for its node: rendered, with an SSH
// connection to the node open and the snippets directory made, so that what is left for the
// node's build gate is the write. Prepare readies it while the step waits for the gate.
type snippet struct {
	conn  *sshx.Client
	path  string
	data  []byte
	volid string
}

// readyCloudInit renders the machine's user-data; the snippet is not connected yet.
func (h *Handler) readyCloudInit(ctx context.Context, w *stepWork) (*snippet, error) {
	if w.node.SSHAddress == nil || w.node.SSHHostKey == nil {
		return nil, fmt.Errorf("node %s has no SSH endpoint configured in Horizon; an admin sets it on the Proxmox server", w.node.Name)
	}
	hostKey, err := h.machineHostKey(ctx, w)
	if err != nil {
		return nil, err
	}
	_, deployPub, err := h.deployKey(ctx)
	if err != nil {
		return nil, err
	}
	keys := []string{deployPub}
	if w.userKey != nil {
		keys = append(keys, w.userKey.PublicKey)
	}
	data, err := cloudinit.RenderUserData(cloudinit.Machine{Hostname: vmName(w), AuthorizedKeys: keys, HostKey: hostKey,
		NodeExporter: w.exec.Config.NodeExporter})
	if err != nil {
		return nil, err
	}
	storage, err := snippetStorage(w)
	if err != nil {
		return nil, err
	}
	volid, err := cloudinit.VolumeID(storage.Name, snippetName(w))
	if err != nil {
		return nil, err
	}
	return &snippet{path: filepath.Join(storage.Path, "snippets", snippetName(w)), data: data, volid: volid}, nil
}

// connect opens the snippet's connection to its node and makes the snippets directory.
func (sn *snippet) connect(ctx context.Context, h *Handler, w *stepWork) error {
	c, err := proxmox.DialNode(ctx, h.Box, *w.server, w.node.Name)
	if err != nil {
		return err
	}
	if err := c.MkdirAll(ctx, filepath.Dir(sn.path)); err != nil {
		_ = c.Close()
		return err
	}
	sn.conn = c
	return nil
}

func (sn *snippet) close() {
	if sn != nil && sn.conn != nil {
		_ = sn.conn.Close()
		sn.conn = nil
	}
}

// uploadCloudInit puts the machine's user-data on the node's snippet storage over SFTP, with
// the snippet Prepare readied (or readies it now), and returns the snippet's volume id. A
// connection that Prepare could not open, or that the node dropped while the step waited, is
// opened again here.
func (h *Handler) uploadCloudInit(ctx context.Context, w *stepWork, out *attempt.Log) (string, error) {
	sn := w.snippet
	if sn == nil {
		var err error
		if sn, err = h.readyCloudInit(ctx, w); err != nil {
			return "", err
		}
		defer sn.close()
	}
	if sn.conn != nil {
		err := sn.upload(ctx)
		if err == nil {
			return sn.volid, nil
		}
		out.Say("the connection to node %s opened while waiting failed (%v); connecting again", w.node.Name, err)
		sn.close()
	}
	if err := sn.connect(ctx, h, w); err != nil {
		return "", err
	}
	if err := sn.upload(ctx); err != nil {
		return "", fmt.Errorf("upload cloud-init to node %s: %w", w.node.Name, err)
	}
	return sn.volid, nil
}

func (sn *snippet) upload(ctx context.Context) error {
	return sn.conn.Upload(ctx, sn.path, bytes.NewReader(sn.data), 0o600)
}

// removeCloudInit deletes the execution's cloud-init snippet once its machine is destroyed: the
// snippet holds the machine's SSH host private key, which must not outlive the machine on the
// node. A snippet already gone is fine (a destroy tried again).
func (h *Handler) removeCloudInit(ctx context.Context, w *stepWork, out *attempt.Log) error {
	storage, err := snippetStorage(w)
	if err != nil {
		return nil // the node has no snippet storage: nothing was uploaded
	}
	volid, err := cloudinit.VolumeID(storage.Name, snippetName(w))
	if err != nil {
		return err
	}
	client, err := proxmox.ForServer(h.Box, *w.server, 30*time.Second)
	if err != nil {
		return err
	}
	var upid string
	switch err := client.Delete(ctx, proxmox.ContentPath(w.node.Name, storage.Name, volid), &upid); {
	case errors.Is(err, proxmox.ErrNotFound):
		return nil
	case err != nil:
		return fmt.Errorf("delete the cloud-init snippet %s: %w", volid, err)
	}
	if upid != "" {
		if err := client.WaitTask(ctx, upid, 0); err != nil {
			return fmt.Errorf("delete the cloud-init snippet %s: %w", volid, err)
		}
	}
	out.Say("deleted the cloud-init snippet %s", volid)
	return nil
}

// machineHostKey returns the execution's SSH host key, generating and storing it the first
// time: the machine presents it (cloud-init), and scripts pin it.
func (h *Handler) machineHostKey(ctx context.Context, w *stepWork) (cloudinit.HostKey, error) {
	if len(w.exec.HostKey) > 0 && w.exec.HostKeyFingerprint != nil {
		priv, err := h.Box.OpenString(horizon.PurposeHostKey, w.exec.HostKey)
		if err != nil {
			return cloudinit.HostKey{}, err
		}
		signer, err := ssh.ParsePrivateKey([]byte(priv.Reveal()))
		if err != nil {
			return cloudinit.HostKey{}, err
		}
		w.Masker.Add(priv.Reveal())
		pub := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey())))
		return cloudinit.HostKey{Private: priv, Public: pub, Fingerprint: *w.exec.HostKeyFingerprint}, nil
	}
	k, err := cloudinit.NewHostKey()
	if err != nil {
		return k, err
	}
	sealed := h.Box.SealString(horizon.PurposeHostKey, k.Private.Reveal())
	kept, fingerprint, err := store.ExecutionSetHostKey(ctx, h.DB, w.exec.ID, sealed, k.Fingerprint)
	if err != nil {
		return k, err
	}
	// Another attempt recorded a key first (a stale delivery preparing beside the owner): the
	// machine gets that one, so that what Horizon pins is what the machine has.
	w.exec.HostKey, w.exec.HostKeyFingerprint = kept, &fingerprint
	if fingerprint != k.Fingerprint {
		return h.machineHostKey(ctx, w)
	}
	w.Masker.Add(k.Private.Reveal())
	return k, nil
}

// deployKey returns Horizon's deploy key, with which scripts log in to the machines.
func (h *Handler) deployKey(ctx context.Context) (ssh.Signer, string, error) {
	sealed, pub, err := store.DeployKey(ctx, h.DB, func() ([]byte, string, error) {
		k, err := cloudinit.NewHostKey() // an ed25519 pair, the same shape a login key needs
		if err != nil {
			return nil, "", err
		}
		return h.Box.SealString(horizon.PurposeDeployKey, k.Private.Reveal()), k.Public, nil
	})
	if err != nil {
		return nil, "", err
	}
	priv, err := h.Box.OpenString(horizon.PurposeDeployKey, sealed)
	if err != nil {
		return nil, "", err
	}
	signer, err := ssh.ParsePrivateKey([]byte(priv.Reveal()))
	return signer, pub, err
}

// proxmoxEnv is the environment Terraform gets to reach the cluster, under both common provider
// conventions, plus a CA bundle file (in dir) that verifies the API.
func (h *Handler) proxmoxEnv(ctx context.Context, w *stepWork, dir string) (map[string]string, error) {
	if w.server == nil {
		return nil, nil
	}
	token, err := h.Box.OpenString(horizon.PurposeProxmoxTokenSecret, w.server.TokenSecret)
	if err != nil {
		return nil, err
	}
	client, err := proxmox.ForServer(h.Box, *w.server, 30*time.Second)
	if err != nil {
		return nil, err
	}
	bundle, err := client.TrustBundle(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the certificate of %s: %w", w.server.APIURL, err)
	}
	caFile := filepath.Join(dir, "proxmox-ca.pem")
	if err := os.WriteFile(caFile, bundle, 0o600); err != nil {
		return nil, err
	}
	env := map[string]string{
		"PROXMOX_VE_ENDPOINT":     w.server.APIURL,
		"PROXMOX_VE_API_TOKEN":    w.server.TokenID + "=" + token.Reveal(),
		"PM_API_URL":              w.server.APIURL + "/api2/json",
		"PM_API_TOKEN_ID":         w.server.TokenID,
		"PM_API_TOKEN_SECRET":     token.Reveal(),
		"HORIZON_PROXMOX_CA_FILE": caFile,
	}
	// Providers and the tools a module runs trust one file: the system's roots, so that
	// registries and other HTTPS still verify, plus the cluster's certificate, so that they
	// verify a self-signed PVE as Horizon does, without being told to skip verification. Go
	// reads SSL_CERT_FILE; curl reads CURL_CA_BUNDLE (a distribution's curl names its own bundle
	// and ignores SSL_CERT_FILE); Python's requests reads REQUESTS_CA_BUNDLE.
	if roots := systemRoots(); roots != nil {
		trust := filepath.Join(dir, "trust.pem")
		if err := os.WriteFile(trust, append(append(roots, '\n'), bundle...), 0o600); err != nil {
			return nil, err
		}
		for _, name := range []string{"SSL_CERT_FILE", "CURL_CA_BUNDLE", "REQUESTS_CA_BUNDLE"} {
			env[name] = trust
		}
	}
	return env, nil
}

// systemRoots reads the host's CA bundle (SSL_CERT_FILE if the worker has one, else the
// distributions' usual places), or nil when there is none.
func systemRoots() []byte {
	for _, f := range []string{os.Getenv("SSL_CERT_FILE"), "/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt",
		"/etc/ssl/ca-bundle.pem", "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", "/etc/ssl/cert.pem"} {
		if f == "" {
			continue
		}
		if b, err := os.ReadFile(f); err == nil && len(b) > 0 {
			return b
		}
	}
	return nil
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func sorted(xs []string) []string {
	sort.Strings(xs)
	return xs
}

// isoArtifact is what the machine's ISO offers it, when the job uses one that is usable.
func isoArtifact(w *stepWork) (horizon.ISOArtifact, bool) {
	if w.iso == nil || w.isoErr != nil {
		return horizon.ISOArtifact{}, false
	}
	return w.iso.Artifact()
}
