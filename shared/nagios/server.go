package nagios

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/crypto/ssh"

	"horizon/shared/horizon"
	"horizon/shared/secrets"
	"horizon/shared/sshx"
)

// Discovery is what a server's CGIs list: host groups that have members and commands.
type Discovery struct {
	Hostgroups []string
	Commands   []string
}

// Discover reads what the server offers to forms and to the pre-deploy check.
func (c *Client) Discover(ctx context.Context) (Discovery, error) {
	cmds, err := c.Commands(ctx)
	if err != nil {
		return Discovery{}, err
	}
	groups, err := c.Hostgroups(ctx)
	if err != nil {
		return Discovery{}, err
	}
	return Discovery{Hostgroups: groups, Commands: cmds}, nil
}

// ErrNoSSH: the server was registered without SSH access, so nothing can be published to it.
var ErrNoSSH = errors.New("the nagios server has no SSH access registered: update it with ssh_address, ssh_private_key and ssh_host_key_fingerprint")

// Open returns the reader and the write target of a stored server, opening its secrets.
func Open(box *secrets.Box, n horizon.NagiosServer) (*Client, Target, error) {
	pw, err := box.OpenString(horizon.PurposeNagiosPassword, n.Password)
	if err != nil {
		return nil, Target{}, fmt.Errorf("nagios server %s: open password: %w", n.ID, err)
	}
	c := &Client{URL: n.URL, Username: n.Username, Password: pw.Reveal()}
	if n.SSHPrivateKey == nil || n.SSHAddress == "" {
		return c, Target{}, ErrNoSSH
	}
	key, err := box.Open(horizon.PurposeNagiosSSHPrivateKey, n.SSHPrivateKey)
	if err != nil {
		return nil, Target{}, fmt.Errorf("nagios server %s: open ssh key: %w", n.ID, err)
	}
	signer, err := ssh.ParsePrivateKey(key)
	if err != nil {
		return nil, Target{}, fmt.Errorf("nagios server %s: ssh key: %w", n.ID, err)
	}
	return c, Target{SSH: sshx.Config{Addr: n.SSHAddress, User: n.SSHUser, Signer: signer, HostKey: n.SSHHostKey},
		Dir: n.ConfigDir, Verify: n.VerifyCommand, Reload: n.ReloadCommand}, nil
}
