package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/crypto/ssh"
)

// demoKeyName is the SSH key `up` registers for the admin, so that the example can be deployed
// at once: the form's SSH key list is not empty, and the machines accept this key.
const demoKeyName = "demo"

// registerDemoKey makes the demo key pair once (.data/demo_ssh_key, mode 0600, and its .pub)
// and registers its public half as the admin's SSH key "demo", unless the admin has a key of
// that name. It returns the private key's path, to print: with it one logs in to the
// sandbox's machines.
func registerDemoKey(ctx context.Context, url, token, data string) (string, error) {
	path := filepath.Join(data, "demo_ssh_key")
	keyPEM, err := readOrCreate(path, newNodeKey)
	if err != nil {
		return "", err
	}
	signer, err := ssh.ParsePrivateKey([]byte(keyPEM + "\n"))
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	pub := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey()))) + " horizon-demo"
	if err := os.WriteFile(path+".pub", []byte(pub+"\n"), 0o644); err != nil {
		return "", err
	}
	var list struct {
		Items []struct {
			Name   string `json:"name"`
			UserID string `json:"user_id"`
		} `json:"items"`
	}
	var me struct {
		ID string `json:"id"`
	}
	if err := call(ctx, url, token, "GET", "/v1/me", nil, &me); err != nil {
		return "", err
	}
	if err := call(ctx, url, token, "GET", "/v1/ssh-keys?limit=200", nil, &list); err != nil {
		return "", err
	}
	for _, k := range list.Items {
		if k.Name == demoKeyName && k.UserID == me.ID {
			return path, nil
		}
	}
	return path, call(ctx, url, token, "POST", "/v1/ssh-keys", map[string]any{"name": demoKeyName, "public_key": pub}, nil)
}
