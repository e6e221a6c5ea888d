package gitsource

import (
	"encoding/base64"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"horizon/shared/secrets"
)

// Credentials give access to one repository. The zero value is anonymous access (a public
// https:// repository, or a file:// one).
type Credentials struct {
	// Username and Token authenticate to an https:// server with HTTP basic authentication
	// (a personal or deploy access token as the password). Username defaults to "horizon":
	// the big forges accept any user name with a token.
	Username string
	Token    secrets.Value
	// SSHKey is an unencrypted private key (OpenSSH or PEM) for an ssh:// server.
	SSHKey secrets.Value
	// SSHHostKey pins the ssh:// server's host key: one or more public keys in
	// authorized_keys form ("ssh-ed25519 AAAA…"). An ssh:// URL without it is refused.
	SSHHostKey string
}

// remote is what a command that talks to a repository needs: its environment (base plus
// credentials), a function that removes every credential from a text, and a cleanup that
// deletes the temporary files holding SSH material.
type remote struct {
	env     []string
	redact  func(string) string
	cleanup func()
}

// userinfoRE finds "user:password@" in URLs that git or a server might echo.
var userinfoRE = regexp.MustCompile(`://[^/@\s]*:[^/@\s]*@`)

func (c *Cache) remote(repoURL string, creds Credentials) (*remote, error) {
	u, err := url.Parse(repoURL)
	if err != nil {
		return nil, fmt.Errorf("%w: does not parse", ErrInvalidURL)
	}
	var secretsToHide []string
	cfg := []string{
		"credential.helper", "", // no helper may answer (or store) anything
		"http.followRedirects", "false", // a redirect must not carry the token elsewhere
		"protocol.version", "2",
	}
	if c.cfg.CAFile != "" {
		cfg = append(cfg, "http.sslCAInfo", c.cfg.CAFile)
	}
	r := &remote{cleanup: func() {}}
	sshCmd := "false" // nothing but an ssh:// URL may start ssh
	if tok := creds.Token.Reveal(); tok != "" {
		user := creds.Username
		if user == "" {
			user = "horizon"
		}
		basic := base64.StdEncoding.EncodeToString([]byte(user + ":" + tok))
		// The header lives in the environment of this one process tree, never in argv or the URL.
		cfg = append(cfg, "http.extraHeader", "Authorization: Basic "+basic)
		secretsToHide = append(secretsToHide, tok, basic)
	}
	if u.Scheme == "ssh" {
		cmd, cleanup, err := c.sshCommand(u, creds)
		if err != nil {
			return nil, err
		}
		r.cleanup = cleanup
		sshCmd = cmd
		if key := creds.SSHKey.Reveal(); key != "" {
			secretsToHide = append(secretsToHide, strings.Split(strings.TrimSpace(key), "\n")...)
		}
	}
	cfg = append(cfg, "core.sshCommand", sshCmd)
	r.env = append(c.baseEnv(), gitConfig(cfg...)...)
	r.redact = func(s string) string {
		for _, v := range secretsToHide {
			if v = strings.TrimSpace(v); len(v) >= 4 {
				s = strings.ReplaceAll(s, v, "[redacted]")
			}
		}
		return userinfoRE.ReplaceAllString(s, "://[redacted]@")
	}
	return r, nil
}

// sshCommand writes the pinned host key as a known_hosts file and the private key to a file
// of a private temporary directory, and returns the ssh command line git uses, and a cleanup
// that removes both files.
func (c *Cache) sshCommand(u *url.URL, creds Credentials) (string, func(), error) {
	if strings.TrimSpace(creds.SSHHostKey) == "" {
		return "", nil, fmt.Errorf("%w: no host key is pinned for %s", ErrHostKey, u.Host)
	}
	port := u.Port()
	if port == "" {
		port = "22"
	}
	hostPattern := knownhosts.Normalize(net.JoinHostPort(u.Hostname(), port))
	var known strings.Builder
	rest := []byte(creds.SSHHostKey)
	for len(strings.TrimSpace(string(rest))) > 0 {
		key, _, _, next, err := ssh.ParseAuthorizedKey(rest)
		if err != nil {
			return "", nil, fmt.Errorf("%w: the pinned host key does not parse: %v", ErrHostKey, err)
		}
		known.WriteString(knownhosts.Line([]string{hostPattern}, key) + "\n")
		rest = next
	}
	if key := creds.SSHKey.Reveal(); key != "" {
		if _, err := ssh.ParseRawPrivateKey([]byte(key)); err != nil {
			// The parser's message names the problem (format, passphrase), never the key.
			return "", nil, fmt.Errorf("%w: the SSH private key does not parse: %v", ErrAuth, err)
		}
	}
	dir, err := os.MkdirTemp(c.tmpDir(), "ssh-")
	if err != nil {
		return "", nil, fmt.Errorf("ssh temp dir: %w", err)
	}
	cleanup := func() { _ = os.RemoveAll(dir) } // best effort: sweepTmp removes what a failure leaves
	knownFile := filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(knownFile, []byte(known.String()), 0o600); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("write known_hosts: %w", err)
	}
	identity := "none"
	if key := creds.SSHKey.Reveal(); key != "" {
		identity = filepath.Join(dir, "id")
		if !strings.HasSuffix(key, "\n") {
			key += "\n" // OpenSSH refuses a key without its final newline
		}
		if err := os.WriteFile(identity, []byte(key), 0o600); err != nil {
			cleanup()
			return "", nil, fmt.Errorf("write ssh key: %w", err)
		}
	}
	cmd := strings.Join([]string{
		"ssh", "-F", "/dev/null",
		"-o", "BatchMode=yes",
		"-o", "IdentitiesOnly=yes",
		"-o", "IdentityFile=" + shellQuote(identity),
		"-o", "StrictHostKeyChecking=yes",
		"-o", "UserKnownHostsFile=" + shellQuote(knownFile),
		"-o", "GlobalKnownHostsFile=/dev/null",
		"-o", "UpdateHostKeys=no",
		"-o", "ControlPath=none",
		"-o", "ConnectTimeout=30",
	}, " ")
	return cmd, cleanup, nil
}

// shellQuote quotes s for the shell that runs core.sshCommand.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
