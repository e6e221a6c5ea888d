package proxmox

import (
	"context"
	"fmt"

	"golang.org/x/crypto/ssh"

	"horizon/shared/horizon"
	"horizon/shared/secrets"
	"horizon/shared/sshx"
)

// ContentDirs are where a directory storage keeps image content types under its path, as PVE
// lays them out.
var ContentDirs = map[string]string{"iso": "template/iso", "import": "import", "snippets": "snippets"}

// DialNode opens an SSH connection to a node of srv as Horizon does everywhere: the server's
// SSH user and key (opened with box), the node's address and pinned host key.
func DialNode(ctx context.Context, box *secrets.Box, srv horizon.ProxmoxServer, node string) (*sshx.Client, error) {
	n := srv.Node(node)
	if n == nil || n.SSHAddress == nil || n.SSHHostKey == nil {
		return nil, fmt.Errorf("node %s has no SSH endpoint in Horizon; an admin sets it (address and pinned host key) on %s", node, srv.Name)
	}
	key, err := box.OpenString(horizon.PurposeProxmoxSSHPrivateKey, srv.SSHPrivateKey)
	if err != nil {
		return nil, fmt.Errorf("open the SSH key of %s: %w", srv.Name, err)
	}
	signer, err := ssh.ParsePrivateKey([]byte(key.Reveal()))
	if err != nil {
		return nil, fmt.Errorf("the SSH key of %s does not parse: %w", srv.Name, err)
	}
	c, err := sshx.Dial(ctx, sshx.Config{Addr: *n.SSHAddress, User: srv.SSHUser, Signer: signer, HostKey: *n.SSHHostKey})
	if err != nil {
		return nil, fmt.Errorf("SSH to node %s (%s): %w", node, *n.SSHAddress, err)
	}
	return c, nil
}
