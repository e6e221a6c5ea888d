package pve

import (
	"bufio"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"
)

// sshConfig is the node's server config for one connection: its current host key, and
// public-key login as root with the configured authorized keys.
func (n *Node) sshConfig() (*ssh.ServerConfig, error) {
	allowed, err := n.c.sb.authorizedKeys()
	if err != nil {
		return nil, err
	}
	cfg := &ssh.ServerConfig{
		ServerVersion: "SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3",
		PublicKeyCallback: func(meta ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
			if meta.User() != "root" || !keyAllowed(allowed, key) {
				return nil, errKeyRefused
			}
			return &ssh.Permissions{}, nil
		},
	}
	n.mu.Lock()
	cfg.AddHostKey(n.hostKey)
	n.mu.Unlock()
	return cfg, nil
}

// serveSession serves a node session: only the sftp subsystem (Horizon places snippets over
// SFTP; the sandbox runs no commands on nodes).
func (n *Node) serveSession(_ context.Context, ch ssh.Channel, reqs <-chan *ssh.Request) {
	defer ch.Close()
	for req := range reqs {
		switch {
		case req.Type == "subsystem" && subsystemName(req.Payload) == "sftp":
			_ = req.Reply(true, nil)
			go ssh.DiscardRequests(reqs)
			fs := &sftpFS{resolve: n.resolve, openWrite: n.uploads.begin}
			srv := sftp.NewRequestServer(ch, fs.handlers())
			if err := srv.Serve(); err != nil && !errors.Is(err, io.EOF) {
				n.c.sb.log.Debug("sandbox: node sftp", "node", n.cfg.Name, "error", err)
			}
			_ = srv.Close()
			return
		case req.Type == "env":
			_ = req.Reply(true, nil)
		default:
			_ = req.Reply(false, nil)
		}
	}
}

// subsystemName decodes the payload of a "subsystem" request (one SSH string).
func subsystemName(payload []byte) string {
	var msg struct{ Name string }
	if err := ssh.Unmarshal(payload, &msg); err != nil {
		return ""
	}
	return msg.Name
}

// authorizedKeys are the configured keys plus those of ssh_authorized_keys_file, read now.
func (sb *Sandbox) authorizedKeys() ([]ssh.PublicKey, error) {
	var keys []ssh.PublicKey
	for _, line := range sb.cfg.SSHAuthorizedKeys {
		k, err := parseAuthorizedKey(line)
		if err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	if sb.cfg.SSHAuthorizedKeysFile == "" {
		return keys, nil
	}
	f, err := os.Open(sb.cfg.SSHAuthorizedKeysFile)
	if errors.Is(err, fs.ErrNotExist) {
		return keys, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close() // read-only
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if k, err := parseAuthorizedKey(line); err == nil {
			keys = append(keys, k)
		}
	}
	return keys, sc.Err()
}
