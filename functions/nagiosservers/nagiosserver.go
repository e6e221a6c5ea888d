// Package nagiosservers serves /v1/nagios-servers: the Nagios Core installations Horizon
// publishes machines to. Admins write; everyone reads. The password and the SSH private key are
// sealed at rest and never returned.
//
// A server is read through its CGIs (host groups, commands) and written over SSH in one
// directory Horizon owns (see shared/nagios). Registration checks both sides and names the
// failing field; what the CGIs list is discovered at registration, on refresh and periodically
// (see Discover), and served with the server for forms and the pre-deploy check.
package nagiosservers

import (
	"time"

	"github.com/google/uuid"

	"horizon/shared/horizon"
)

// NagiosServer is a Nagios server as the API shows it: without its secrets.
type NagiosServer struct {
	ID                    uuid.UUID  `json:"id"`
	Name                  string     `json:"name"`
	URL                   string     `json:"url"`
	Username              string     `json:"username"`
	SSHAddress            string     `json:"ssh_address"`
	SSHUser               string     `json:"ssh_user"`
	SSHHostKeyFingerprint string     `json:"ssh_host_key_fingerprint"`
	ConfigDir             string     `json:"config_dir"`
	VerifyCommand         string     `json:"verify_command"`
	ReloadCommand         string     `json:"reload_command"`
	Hostgroups            []string   `json:"hostgroups"`
	Commands              []string   `json:"commands"`
	DiscoveredAt          *time.Time `json:"discovered_at"`
	DiscoveryError        *string    `json:"discovery_error"`
	Version               int64      `json:"version"`
	CreatedAt             time.Time  `json:"created_at"`
	UpdatedAt             time.Time  `json:"updated_at"`
}

func toNagiosServer(n horizon.NagiosServer) NagiosServer {
	return NagiosServer{ID: n.ID, Name: n.Name, URL: n.URL, Username: n.Username, SSHAddress: n.SSHAddress, SSHUser: n.SSHUser,
		SSHHostKeyFingerprint: n.SSHHostKey, ConfigDir: n.ConfigDir, VerifyCommand: n.VerifyCommand, ReloadCommand: n.ReloadCommand,
		Hostgroups: nonNil(n.Hostgroups), Commands: nonNil(n.Commands), DiscoveredAt: n.DiscoveredAt, DiscoveryError: n.DiscoveryError,
		Version: n.Version, CreatedAt: n.CreatedAt, UpdatedAt: n.UpdatedAt}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
