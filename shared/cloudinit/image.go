package cloudinit

import (
	"errors"
	"fmt"
)

// ImageUser is what the user-data of an image build is rendered from: the login user of the
// VM it builds and of every clone of it.
type ImageUser struct {
	// User is the login user to create; DefaultUser when empty.
	User string
	// AuthorizedKeys may log in as User; at least one.
	AuthorizedKeys []string
}

// RenderImageUserData returns the #cloud-config user-data of an image build: the login user
// with its keys, passwordless sudo and a locked password; no root login, no password login.
// Unlike RenderUserData it sets neither a host name nor host keys: the template's clones share
// this document, and each takes its host name from its VM name (Proxmox's meta-data) and
// generates its own host keys on first boot.
func RenderImageUserData(u ImageUser) ([]byte, error) {
	if u.User == "" {
		u.User = DefaultUser
	}
	if !userRE.MatchString(u.User) || u.User == "root" {
		return nil, fmt.Errorf("user %q is not a valid login name", u.User)
	}
	if len(u.AuthorizedKeys) == 0 {
		return nil, errors.New("no authorized key")
	}
	keys := make([]string, len(u.AuthorizedKeys))
	for i, k := range u.AuthorizedKeys {
		norm, err := authorizedKeyLine(k)
		if err != nil {
			return nil, fmt.Errorf("authorized key %d: %w", i, err)
		}
		keys[i] = norm
	}
	doc := struct {
		Users       []user `yaml:"users"`
		DisableRoot bool   `yaml:"disable_root"`
		SSHPwAuth   bool   `yaml:"ssh_pwauth"`
	}{
		Users:       []user{{Name: u.User, Shell: "/bin/bash", Sudo: "ALL=(ALL) NOPASSWD:ALL", LockPasswd: true, SSHAuthorizedKeys: keys}},
		DisableRoot: true,
	}
	return encode(doc)
}
