// Package sshkeys serves /v1/ssh-keys: the public keys users install on the VMs they build.
// A key belongs to a user; users manage their own, admins anyone's. Viewers build nothing, so
// they register no keys.
package sshkeys

import (
	"time"

	"github.com/google/uuid"

	"horizon/shared/horizon"
)

// SSHKey is a key as the API shows it.
type SSHKey struct {
	ID          uuid.UUID `json:"id"`
	UserID      uuid.UUID `json:"user_id"`
	Name        string    `json:"name"`
	PublicKey   string    `json:"public_key"`
	Type        string    `json:"type"`
	Bits        int       `json:"bits"`
	Fingerprint string    `json:"fingerprint"`
	CreatedAt   time.Time `json:"created_at"`
}

func toSSHKey(k horizon.SSHKey) SSHKey {
	return SSHKey{ID: k.ID, UserID: k.UserID, Name: k.Name, PublicKey: k.PublicKey, Type: k.Type, Bits: k.Bits,
		Fingerprint: k.Fingerprint, CreatedAt: k.CreatedAt}
}
