package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
)

// sandboxState is the part of the sandbox's state file dev needs to register it.
type sandboxState struct {
	Clusters []struct {
		Name            string `json:"name"`
		URL             string `json:"url"`
		CertFingerprint string `json:"cert_fingerprint"`
		TokenID         string `json:"token_id"`
		TokenSecret     string `json:"token_secret"`
		Nodes           []struct {
			Name               string `json:"name"`
			SSHAddr            string `json:"ssh_addr"`
			HostKeyFingerprint string `json:"host_key_fingerprint"`
		} `json:"nodes"`
	} `json:"clusters"`
}

// startSandbox builds and starts the Proxmox VE sandbox with the demo configuration, after
// making sure its nodes accept Horizon's node key (.data/node_ssh_key).
func startSandbox(ctx context.Context, root, data, vmSSHPort string, procs *processes) (sandboxState, string, error) {
	keyPEM, err := readOrCreate(filepath.Join(data, "node_ssh_key"), newNodeKey)
	if err != nil {
		return sandboxState{}, "", err
	}
	signer, err := ssh.ParsePrivateKey([]byte(keyPEM + "\n"))
	if err != nil {
		return sandboxState{}, "", fmt.Errorf("read .data/node_ssh_key: %w", err)
	}
	// demo.yaml reads this file at every login.
	pub := ssh.MarshalAuthorizedKey(signer.PublicKey())
	if err := os.WriteFile(filepath.Join(data, "sandbox-authorized_keys"), pub, 0o600); err != nil {
		return sandboxState{}, "", err
	}
	bin := filepath.Join(data, "bin", "sandbox")
	if err := build(ctx, root, "deploy/sandbox", bin); err != nil {
		return sandboxState{}, "", err
	}
	statePath := filepath.Join(data, "sandbox.json")
	_ = os.Remove(statePath) // a stale file must not be mistaken for the new sandbox's
	if err := procs.start(ctx, "sandbox", os.Environ(), bin, "-config", filepath.Join(root, "deploy/sandbox/demo.yaml"),
		"-state", statePath, "-data", filepath.Join(data, "sandbox"), "-vm-ssh-port", vmSSHPort); err != nil {
		return sandboxState{}, "", err
	}
	var st sandboxState
	err = waitFor(ctx, 30*time.Second, func() bool {
		b, err := os.ReadFile(statePath)
		return err == nil && json.Unmarshal(b, &st) == nil && len(st.Clusters) > 0
	})
	if err != nil {
		return st, "", errors.New("sandbox: it did not start (ports 8006 and 2201-2203 on 127.0.0.1 must be free); see its log above")
	}
	return st, keyPEM, nil
}

func newNodeKey() string {
	_, priv, _ := ed25519.GenerateKey(rand.Reader) // crypto/rand does not fail on Linux
	block, _ := ssh.MarshalPrivateKey(priv, "horizon dev")
	return strings.TrimSpace(string(pem.EncodeToMemory(block)))
}

// registerSandbox registers the sandbox's cluster as the Proxmox server "sandbox" and makes a
// demo environment using it, unless they exist from an earlier run.
func registerSandbox(ctx context.Context, url, token string, st sandboxState, keyPEM string) error {
	c := st.Clusters[0]
	var list struct {
		Items []struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		} `json:"items"`
	}
	if err := call(ctx, url, token, "GET", "/v1/proxmox-servers", nil, &list); err != nil {
		return err
	}
	var nodes []map[string]any
	for _, n := range c.Nodes {
		nodes = append(nodes, map[string]any{"name": n.Name, "ssh_address": n.SSHAddr, "ssh_host_key_fingerprint": n.HostKeyFingerprint})
	}
	body := map[string]any{"api_url": c.URL, "token_id": c.TokenID, "token_secret": c.TokenSecret,
		"tls_fingerprint": c.CertFingerprint, "ssh_user": "root", "ssh_private_key": keyPEM, "nodes": nodes}
	for _, s := range list.Items {
		if s.Name == "sandbox" {
			// Keep the registration in step with the sandbox (its ports or keys may have changed).
			return call(ctx, url, token, "PATCH", "/v1/proxmox-servers/"+s.ID, body, nil)
		}
	}
	body["name"] = "sandbox"
	var srv struct {
		ID string `json:"id"`
	}
	if err := call(ctx, url, token, "POST", "/v1/proxmox-servers", body, &srv); err != nil {
		return err
	}
	var network struct {
		ID string `json:"id"`
	}
	if err := call(ctx, url, token, "POST", "/v1/networks", map[string]any{"name": "sandbox-loopback", "cidr": "127.42.0.0/24",
		"gateway": "127.42.0.1", "dns": []string{"127.0.0.53"}, "bridge": "vmbr0"}, &network); err != nil {
		return err
	}
	for i := 10; i < 20; i++ {
		addr := map[string]any{"name": fmt.Sprintf("vm-%d", i), "ip": fmt.Sprintf("127.42.0.%d", i)}
		if err := call(ctx, url, token, "POST", "/v1/networks/"+network.ID+"/addresses", addr, nil); err != nil {
			return err
		}
	}
	return call(ctx, url, token, "POST", "/v1/environments", map[string]any{"name": "sandbox", "description": "The local Proxmox VE sandbox",
		"network_ids": []string{network.ID}, "proxmox_server_ids": []string{srv.ID}}, nil)
}

// ensureTeam puts the admin in a team ("default", made when there is none) so that the
// first stack can be created from the console or the API without first learning about teams.
// An admin who already belongs to a team is left alone. It returns the team's name.
func ensureTeam(ctx context.Context, url, token string) (string, error) {
	var me struct {
		ID    string   `json:"id"`
		Teams []string `json:"teams"`
	}
	if err := call(ctx, url, token, "GET", "/v1/me", nil, &me); err != nil {
		return "", err
	}
	var teams struct {
		Items []struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		} `json:"items"`
	}
	if err := call(ctx, url, token, "GET", "/v1/teams", nil, &teams); err != nil {
		return "", err
	}
	for _, t := range teams.Items {
		if slices.Contains(me.Teams, t.ID) {
			return t.Name, nil
		}
	}
	var team struct {
		ID string `json:"id"`
	}
	for _, t := range teams.Items {
		if t.Name == "default" {
			team.ID = t.ID
		}
	}
	if team.ID == "" {
		if err := call(ctx, url, token, "POST", "/v1/teams", map[string]any{"name": "default"}, &team); err != nil {
			return "", err
		}
	}
	return "default", call(ctx, url, token, "PATCH", "/v1/users/"+me.ID, map[string]any{"teams": append(me.Teams, team.ID)}, nil)
}

// call sends one API request and decodes its answer into out (when not nil).
func call(ctx context.Context, base, token, method, path string, body, out any) error {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, r)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if res.StatusCode >= 300 {
		return fmt.Errorf("%s %s: %d %s", method, path, res.StatusCode, b)
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}
