package nagiosservers

import (
	"context"
	"errors"
	"net"
	"net/url"
	"path"
	"regexp"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"horizon/shared/horizon"
	"horizon/shared/nagios"
	"horizon/shared/secrets"
	"horizon/shared/sshx"
)

// connectTimeout bounds everything a registration does on the network.
const connectTimeout = 30 * time.Second

const maxCommandLength = 1024

var sshUserPattern = regexp.MustCompile(`^[a-z_][a-z0-9_-]{0,31}$`)

// CreateRequest is the body of POST /v1/nagios-servers. The SSH user, the config directory and
// the commands default to Debian's (root, /etc/nagios4/conf.d/horizon, nagios4 -v, systemctl
// reload nagios4).
type CreateRequest struct {
	Name                  string        `json:"name"`
	URL                   string        `json:"url"`
	Username              string        `json:"username"`
	Password              secrets.Value `json:"password"`
	SSHAddress            string        `json:"ssh_address"`
	SSHUser               string        `json:"ssh_user"`
	SSHPrivateKey         secrets.Value `json:"ssh_private_key"`
	SSHHostKeyFingerprint string        `json:"ssh_host_key_fingerprint"`
	ConfigDir             string        `json:"config_dir"`
	VerifyCommand         string        `json:"verify_command"`
	ReloadCommand         string        `json:"reload_command"`
}

func (r *CreateRequest) defaults() {
	def := func(s *string, v string) {
		if *s == "" {
			*s = v
		}
	}
	def(&r.SSHUser, "root")
	def(&r.ConfigDir, nagios.DefaultConfigDir)
	def(&r.VerifyCommand, nagios.DefaultVerifyCommand)
	def(&r.ReloadCommand, nagios.DefaultReloadCommand)
}

// sides says which sides of a server a check covers: its CGIs (url, username, password) and its
// file side over SSH (address, user, key, host key, config directory, commands).
type sides struct{ cgi, ssh bool }

var bothSides = sides{cgi: true, ssh: true}

// check validates the syntax of the request's fields on the sides given (and its name),
// recording every problem; it touches no network.
func (r *CreateRequest) check(p *horizon.Problems, which sides) ssh.Signer {
	horizon.CheckName(p, "name", r.Name, horizon.MaxNameLength)
	if which.cgi {
		checkURL(p, "url", r.URL)
		horizon.CheckName(p, "username", r.Username, horizon.MaxNameLength)
		if r.Password == "" {
			p.Add("password", "is required")
		} else if len(r.Password) > 1024 {
			p.Add("password", "must be at most 1024 bytes")
		}
	}
	if !which.ssh {
		return nil
	}
	if _, port, err := net.SplitHostPort(r.SSHAddress); err != nil || port == "" {
		p.Add("ssh_address", "must be host:port, e.g. nagios.example.org:22")
	}
	if !sshUserPattern.MatchString(r.SSHUser) {
		p.Add("ssh_user", "must be a Unix user name, e.g. root")
	}
	signer, err := ssh.ParsePrivateKey([]byte(r.SSHPrivateKey.Reveal()))
	if err != nil {
		p.Add("ssh_private_key", "must be an unencrypted private key in OpenSSH or PEM format")
	}
	if err := (sshx.Config{Addr: "x", User: "x", Signer: signer, HostKey: r.SSHHostKeyFingerprint}).Validate(); err != nil {
		var ve *horizon.ValidationError
		if errors.As(err, &ve) {
			for _, f := range ve.Fields {
				if f.Field == "host_key" {
					p.Add("ssh_host_key_fingerprint", "must be the server's SHA256 host key fingerprint (ssh-keygen -lf): %s", f.Message)
				}
			}
		}
	}
	if !path.IsAbs(r.ConfigDir) || path.Clean(r.ConfigDir) != r.ConfigDir || r.ConfigDir == "/" || strings.ContainsFunc(r.ConfigDir, badRune) {
		p.Add("config_dir", "must be a clean absolute directory that Horizon owns, e.g. %s", nagios.DefaultConfigDir)
	}
	for field, cmd := range map[string]string{"verify_command": r.VerifyCommand, "reload_command": r.ReloadCommand} {
		if len(cmd) > maxCommandLength || strings.ContainsFunc(cmd, badRune) {
			p.Add(field, "must be one line of at most %d bytes", maxCommandLength)
		}
	}
	return signer
}

func badRune(r rune) bool { return r < ' ' || r == 0x7f }

func checkURL(p *horizon.Problems, field, s string) {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") || u.User != nil || u.RawQuery != "" {
		p.Add(field, "must be an http(s) URL without credentials, e.g. https://nagios.example.org/cgi-bin/nagios4")
		return
	}
	if u.Scheme == "http" && u.Hostname() != "localhost" && u.Hostname() != "127.0.0.1" && u.Hostname() != "::1" {
		p.Add(field, "must use https (the password travels with every request)")
	}
}

// connect checks the sides given of the server (its CGIs, and SSH with the verify and reload
// commands), discovers what it offers when its CGIs are checked, and returns the server to
// store, its secrets sealed (the private key stays nil when none is given). What the server
// answers is a problem on the field that is probably wrong.
func connect(ctx context.Context, box *secrets.Box, r CreateRequest, which sides) (horizon.NagiosServer, error) {
	r.defaults()
	var p horizon.Problems
	signer := r.check(&p, which)
	if err := p.Err(); err != nil {
		return horizon.NagiosServer{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	client := &nagios.Client{URL: strings.TrimSuffix(r.URL, "/"), Username: r.Username, Password: r.Password.Reveal()}
	var found nagios.Discovery
	if which.cgi {
		var err error
		found, err = client.Discover(ctx)
		switch {
		case errors.Is(err, nagios.ErrUnauthorized):
			p.Add("password", "Nagios refused this username and password")
		case err != nil:
			p.Add("url", "%s", err.Error())
		}
	}
	if which.ssh {
		checkSSH(ctx, &p, r, signer)
	}
	if err := p.Err(); err != nil {
		return horizon.NagiosServer{}, err
	}
	var key []byte
	if r.SSHPrivateKey != "" {
		key = box.SealString(horizon.PurposeNagiosSSHPrivateKey, r.SSHPrivateKey.Reveal())
	}
	return horizon.NagiosServer{Name: r.Name, URL: client.URL, Username: r.Username,
		Password:   box.SealString(horizon.PurposeNagiosPassword, r.Password.Reveal()),
		SSHAddress: r.SSHAddress, SSHUser: r.SSHUser, SSHHostKey: r.SSHHostKeyFingerprint, SSHPrivateKey: key,
		ConfigDir: r.ConfigDir, VerifyCommand: r.VerifyCommand, ReloadCommand: r.ReloadCommand,
		Hostgroups: found.Hostgroups, Commands: found.Commands}, nil
}

// checkSSH connects with the pinned host key, creates the config directory, runs the verify
// command and checks that the reload command's program exists (without reloading Nagios),
// recording why it fails.
func checkSSH(ctx context.Context, p *horizon.Problems, r CreateRequest, signer ssh.Signer) {
	c, err := sshx.Dial(ctx, sshx.Config{Addr: r.SSHAddress, User: r.SSHUser, Signer: signer, HostKey: r.SSHHostKeyFingerprint})
	var hk *sshx.HostKeyError
	switch {
	case errors.As(err, &hk):
		p.Add("ssh_host_key_fingerprint", "the server presented %s, not the pinned %s", hk.Got, hk.Want)
		return
	case errors.Is(err, sshx.ErrAuth):
		p.Add("ssh_private_key", "the server refused it for user %s; install its public key in that user's authorized_keys", r.SSHUser)
		return
	case err != nil:
		p.Add("ssh_address", "no SSH server answers there")
		return
	}
	defer func() { _ = c.Close() }() // a probe connection
	if err := c.MkdirAll(ctx, r.ConfigDir); err != nil {
		p.Add("config_dir", "cannot be created or is not a directory for user %s", r.SSHUser)
		return
	}
	// The reload check runs beside the verify command (a session each on the one connection):
	// a session costs its own start on the server, and registration has one request's time.
	reload := make(chan error, 1)
	go func() { reload <- nagios.CheckReload(ctx, c, r.ReloadCommand) }()
	if line, err := nagios.Verify(ctx, c, r.VerifyCommand); err != nil {
		if line == "" {
			line = err.Error()
		}
		p.Add("verify_command", "failed: %s", line)
	}
	if err := <-reload; err != nil {
		p.Add("reload_command", "cannot run: %v", err)
	}
}
