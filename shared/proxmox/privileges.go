package proxmox

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// MachinePrivileges are what building, configuring, starting and removing a machine asks of
// the token on the VM (through its pool's or /vms's ACLs): a Terraform provider creates and
// configures the VM, Horizon starts, stops and destroys it.
var MachinePrivileges = []string{
	"VM.Allocate", "VM.Audit", "VM.Config.CDROM", "VM.Config.CPU", "VM.Config.Cloudinit", "VM.Config.Disk",
	"VM.Config.HWType", "VM.Config.Memory", "VM.Config.Network", "VM.Config.Options", "VM.PowerMgmt",
}

// TokenPrivileges is the least Horizon's API token needs for everything it does: build,
// configure, start, stop and remove machines, build ISOs (download, template, linked clones)
// and discover the cluster. deploy/README.md gives it as a pveum recipe; a test checks that the
// recipe and this list agree and that a token holding exactly these deploys a stack and builds
// an ISO end to end.
var TokenPrivileges = []string{
	"Datastore.Allocate", "Datastore.AllocateSpace", "Datastore.AllocateTemplate", "Datastore.Audit",
	"Pool.Audit", "SDN.Audit", "SDN.Use", "Sys.AccessNetwork", "Sys.Audit",
	"VM.Allocate", "VM.Audit", "VM.Clone", "VM.Config.CDROM", "VM.Config.CPU", "VM.Config.Cloudinit", "VM.Config.Disk",
	"VM.Config.HWType", "VM.Config.Memory", "VM.Config.Network", "VM.Config.Options", "VM.PowerMgmt",
}

// Privileges returns the token's effective privileges on path, as PVE computes them (ACLs,
// roles, propagation, pool membership, privilege separation): GET /access/permissions?path=.
func (c *Client) Privileges(ctx context.Context, path string) (map[string]bool, error) {
	var byPath map[string]map[string]int
	if err := c.Get(ctx, "/access/permissions?path="+url.QueryEscape(path), &byPath); err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for priv, v := range byPath[path] {
		if v != 0 {
			out[priv] = true
		}
	}
	return out, nil
}

// Lacking returns which of want the token holds on none of paths (in want's order), for a
// privilege PVE accepts on either (e.g. VM.Allocate on /vms/<vmid> or on /pool/<pool>).
func (c *Client) Lacking(ctx context.Context, want []string, paths ...string) ([]string, error) {
	held := map[string]bool{}
	for _, p := range paths {
		privs, err := c.Privileges(ctx, p)
		if err != nil {
			return nil, err
		}
		for priv := range privs {
			held[priv] = true
		}
	}
	var missing []string
	for _, priv := range want {
		if !held[priv] {
			missing = append(missing, priv)
		}
	}
	return missing, nil
}

// MissingPrivileges says which privileges a token lacks on which path, in the words an
// operator acts on: "token horizon@pve!deploy lacks VM.Allocate on /pool/prod".
func MissingPrivileges(token string, missing []string, paths ...string) string {
	return fmt.Sprintf("token %s lacks %s on %s", token, strings.Join(slices.Clone(missing), ", "), strings.Join(paths, " or "))
}
