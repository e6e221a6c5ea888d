package gitsource_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"horizon/shared/gitsource"
	"horizon/shared/secrets"
)

// sshKey is an ed25519 key pair in the forms the tests need.
type sshKey struct {
	signer     ssh.Signer
	privatePEM string
	authorized string // "ssh-ed25519 AAAA…"
}

func newSSHKey(t testing.TB) sshKey {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	return sshKey{
		signer:     signer,
		privatePEM: string(pem.EncodeToMemory(block)),
		authorized: strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey()))),
	}
}

// startSSHServer serves git-upload-pack over SSH on a loopback port to clients holding
// client's key, with host as its host key. It returns the address.
func startSSHServer(t testing.TB, host, client sshKey) string {
	t.Helper()
	cfg := &ssh.ServerConfig{
		PublicKeyCallback: func(_ ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
			if bytes.Equal(key.Marshal(), client.signer.PublicKey().Marshal()) {
				return nil, nil
			}
			return nil, errors.New("unknown key")
		},
	}
	cfg.AddHostKey(host.signer)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() }) // ends the accept loop
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go serveSSH(conn, cfg)
		}
	}()
	return ln.Addr().String()
}

func serveSSH(conn net.Conn, cfg *ssh.ServerConfig) {
	defer conn.Close()
	_, chans, reqs, err := ssh.NewServerConn(conn, cfg)
	if err != nil {
		return // a refused handshake is what some tests expect
	}
	go ssh.DiscardRequests(reqs)
	for nc := range chans {
		if nc.ChannelType() != "session" {
			_ = nc.Reject(ssh.UnknownChannelType, "session only")
			continue
		}
		ch, chReqs, err := nc.Accept()
		if err != nil {
			return
		}
		go serveSession(ch, chReqs)
	}
}

// serveSession runs the one command git asks for: git-upload-pack '<path>'.
func serveSession(ch ssh.Channel, reqs <-chan *ssh.Request) {
	defer ch.Close()
	env := []string{"PATH=" + os.Getenv("PATH"), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"}
	for req := range reqs {
		switch req.Type {
		case "env":
			var kv struct{ Name, Value string }
			if ssh.Unmarshal(req.Payload, &kv) == nil && kv.Name == "GIT_PROTOCOL" {
				env = append(env, "GIT_PROTOCOL="+kv.Value)
			}
			_ = req.Reply(true, nil)
		case "exec":
			var cmd struct{ Command string }
			if ssh.Unmarshal(req.Payload, &cmd) != nil || !strings.HasPrefix(cmd.Command, "git-upload-pack ") {
				_ = req.Reply(false, nil)
				return
			}
			_ = req.Reply(true, nil)
			path := strings.Trim(strings.TrimPrefix(cmd.Command, "git-upload-pack "), "'")
			c := exec.Command("git-upload-pack", path)
			c.Env, c.Stdin, c.Stdout, c.Stderr = env, ch, ch, ch.Stderr()
			status := uint32(0)
			if err := c.Run(); err != nil {
				status = 1
			}
			_, _ = ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{status}))
			return
		default:
			_ = req.Reply(false, nil)
		}
	}
}

func TestSSH(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("ssh"); err != nil {
		t.Fatalf("ssh client not on PATH: %v", err)
	}
	host, client, stranger := newSSHKey(t), newSSHKey(t), newSSHKey(t)
	addr := startSSHServer(t, host, client)
	repo := newRepo(t)
	commit := repo.Commit(map[string]string{"main.tf": "# over ssh\n"})
	repoURL := fmt.Sprintf("ssh://git@%s%s", addr, repo.Dir)

	for _, tc := range []struct {
		name  string
		creds gitsource.Credentials
		want  error
	}{
		{"pinned host key and authorised key", gitsource.Credentials{SSHKey: secrets.Value(client.privatePEM), SSHHostKey: host.authorized}, nil},
		{"wrong pinned host key", gitsource.Credentials{SSHKey: secrets.Value(client.privatePEM), SSHHostKey: stranger.authorized}, gitsource.ErrHostKey},
		{"no pinned host key", gitsource.Credentials{SSHKey: secrets.Value(client.privatePEM)}, gitsource.ErrHostKey},
		{"key the server does not know", gitsource.Credentials{SSHKey: secrets.Value(stranger.privatePEM), SSHHostKey: host.authorized}, gitsource.ErrAuth},
		{"no key", gitsource.Credentials{SSHHostKey: host.authorized}, gitsource.ErrAuth},
		{"key that does not parse", gitsource.Credentials{SSHKey: "not a key", SSHHostKey: host.authorized}, gitsource.ErrAuth},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := cacheDir(t)
			c := newCacheAt(t, dir)
			got, err := c.Resolve(context.Background(), repoURL, "main", tc.creds)
			switch {
			case tc.want == nil && (err != nil || got != commit):
				t.Fatalf("Resolve = %q, %v; want %q", got, err, commit)
			case tc.want != nil && !errors.Is(err, tc.want):
				t.Fatalf("got %v, want %v", err, tc.want)
			case tc.want == nil:
				// A cold cache fetches the commit by id over SSH too.
				if _, err := newCache(t).Tree(context.Background(), repoURL, commit, tc.creds); err != nil {
					t.Fatalf("Tree on a cold cache: %v", err)
				}
			}
			if err != nil {
				for _, line := range strings.Split(client.privatePEM, "\n")[1:3] {
					if strings.Contains(err.Error(), line) {
						t.Fatalf("the error shows the private key: %v", err)
					}
				}
			}
			if left, _ := os.ReadDir(filepath.Join(dir, "tmp")); len(left) != 0 {
				t.Fatalf("key material left in tmp/: %v", left)
			}
		})
	}
}
