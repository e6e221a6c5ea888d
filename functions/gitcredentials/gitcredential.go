// Package gitcredentials serves /v1/git-credentials: the credentials Horizon uses to read
// private template repositories. Admins only, for reading too: the list says which repositories
// are private and under which accounts.
//
// A credential is an HTTPS token (url_prefix https://…, optional username, token) or an SSH key
// (url_prefix ssh://…, ssh_private_key, and the server's host key, pinned: ssh_host_key in
// authorized_keys form). The kind follows the prefix's scheme. Secrets are sealed with the
// secrets.Box under gitcred's purposes, never returned and never logged (requests hold them as
// secrets.Value, which prints [redacted]). There is no update: delete and create again, which
// is also how a token is rotated. Which credential serves a repository, and the prefix rules,
// are gitcred's.
package gitcredentials

import (
	"strings"
	"time"

	"github.com/google/uuid"
	"golang.org/x/crypto/ssh"

	"horizon/shared/horizon"
)

// GitCredential is a credential as the API shows it: without its token or private key.
type GitCredential struct {
	ID                     uuid.UUID `json:"id"`
	Name                   string    `json:"name"`
	URLPrefix              string    `json:"url_prefix"`
	Kind                   string    `json:"kind"`
	Username               string    `json:"username"`
	SSHHostKey             string    `json:"ssh_host_key"`
	SSHHostKeyFingerprints []string  `json:"ssh_host_key_fingerprints"`
	CreatedAt              time.Time `json:"created_at"`
}

func toGitCredential(g horizon.GitCredential) GitCredential {
	fps := []string{}
	for _, line := range strings.Split(g.SSHHostKey, "\n") {
		if pub, _, _, _, err := ssh.ParseAuthorizedKey([]byte(line)); err == nil {
			fps = append(fps, ssh.FingerprintSHA256(pub))
		}
	}
	return GitCredential{ID: g.ID, Name: g.Name, URLPrefix: g.URLPrefix, Kind: g.Kind, Username: g.Username,
		SSHHostKey: g.SSHHostKey, SSHHostKeyFingerprints: fps, CreatedAt: g.CreatedAt}
}
