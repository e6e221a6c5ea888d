package gitcredentials

import (
	"context"
	"errors"
	"strings"
	"unicode"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5"
	"golang.org/x/crypto/ssh"

	"horizon/functions/api"
	"horizon/shared/gitcred"
	"horizon/shared/horizon"
	"horizon/shared/secrets"
	"horizon/shared/store"
)

// CreateRequest is the body of POST /v1/git-credentials: username and token for an https://
// prefix, ssh_private_key and ssh_host_key for an ssh:// one.
type CreateRequest struct {
	Name          string        `json:"name"`
	URLPrefix     string        `json:"url_prefix"`
	Username      string        `json:"username"`
	Token         secrets.Value `json:"token"`
	SSHPrivateKey secrets.Value `json:"ssh_private_key"`
	SSHHostKey    string        `json:"ssh_host_key"`
}

// Limits on what a credential holds.
const (
	maxToken  = 4096
	maxSSHKey = 16 << 10
)

// Create registers a git credential (admin). Every problem is reported at once (422); a taken
// name or URL prefix is 409.
func Create(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[CreateRequest]) error {
		g, err := r.Body.check()
		if err != nil {
			return err
		}
		switch g.Kind {
		case horizon.GitCredentialHTTPS:
			g.Token = d.Box.SealString(gitcred.TokenPurpose, r.Body.Token.Reveal())
		case horizon.GitCredentialSSH:
			g.SSHPrivateKey = d.Box.SealString(gitcred.SSHKeyPurpose, r.Body.SSHPrivateKey.Reveal())
		}
		g.CreatedBy = &r.Who.UserID
		g, err = store.WithTxV(ctx, d.DB, func(ctx context.Context, tx pgx.Tx) (horizon.GitCredential, error) {
			g, err := store.GitCredentialCreate(ctx, tx, g)
			if err != nil {
				return g, err
			}
			return g, store.ActivityRecord(ctx, tx, store.Activity{ActorID: &r.Who.UserID, Action: "git_credential.create",
				ObjectType: "git_credential", ObjectID: &g.ID, Details: map[string]any{"name": g.Name, "url_prefix": g.URLPrefix, "kind": g.Kind}})
		})
		if err != nil {
			return err
		}
		c.Set(fiber.HeaderLocation, "/v1/git-credentials/"+g.ID.String())
		return c.Status(fiber.StatusCreated).JSON(toGitCredential(g))
	})
}

// check validates the request and returns the credential it describes, secrets not yet sealed.
func (r CreateRequest) check() (horizon.GitCredential, error) {
	var p horizon.Problems
	horizon.CheckName(&p, "name", r.Name, horizon.MaxNameLength)
	kind, err := gitcred.CheckPrefix(r.URLPrefix)
	if err != nil {
		p.Add("url_prefix", "%v", err)
	}
	g := horizon.GitCredential{Name: r.Name, URLPrefix: r.URLPrefix, Kind: kind}
	token, key := r.Token.Reveal(), r.SSHPrivateKey.Reveal()
	switch kind {
	case horizon.GitCredentialHTTPS:
		switch {
		case token == "":
			p.Add("token", "is required for an https:// prefix")
		case len(token) > maxToken || strings.IndexFunc(token, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0:
			p.Add("token", "must be at most %d bytes without spaces or control characters", maxToken)
		}
		if strings.ContainsRune(r.Username, ':') || strings.IndexFunc(r.Username, unicode.IsControl) >= 0 || len(r.Username) > horizon.MaxNameLength {
			p.Add("username", "must be at most %d characters without ':' or control characters", horizon.MaxNameLength)
		}
		g.Username = r.Username
		for field, set := range map[string]bool{"ssh_private_key": key != "", "ssh_host_key": r.SSHHostKey != ""} {
			if set {
				p.Add(field, "is only for an ssh:// prefix")
			}
		}
	case horizon.GitCredentialSSH:
		checkPrivateKey(&p, key)
		host, err := canonicalHostKeys(r.SSHHostKey)
		if err != nil {
			p.Add("ssh_host_key", "%v", err)
		}
		g.SSHHostKey = host
		for field, set := range map[string]bool{"token": token != "", "username": r.Username != ""} {
			if set {
				p.Add(field, "is only for an https:// prefix (an ssh:// user goes in the URL: ssh://git@host/)")
			}
		}
	}
	return g, p.SortedErr()
}

func checkPrivateKey(p *horizon.Problems, key string) {
	if key == "" {
		p.Add("ssh_private_key", "is required for an ssh:// prefix")
		return
	}
	if len(key) > maxSSHKey {
		p.Add("ssh_private_key", "must be at most %d bytes", maxSSHKey)
		return
	}
	_, err := ssh.ParseRawPrivateKey([]byte(key))
	var missing *ssh.PassphraseMissingError
	switch {
	case errors.As(err, &missing):
		p.Add("ssh_private_key", "is protected by a passphrase; give an unencrypted key (Horizon seals it at rest)")
	case err != nil:
		// The parser's messages name the format problem, never the key's bytes.
		p.Add("ssh_private_key", "is not an OpenSSH or PEM private key")
	}
}

// canonicalHostKeys parses one or more authorized_keys lines (the server's host keys, e.g. from
// ssh-keyscan without the host column) and returns them re-encoded, one per line.
func canonicalHostKeys(s string) (string, error) {
	if strings.TrimSpace(s) == "" {
		return "", errors.New("is required for an ssh:// prefix: pin the server's host key, e.g. \"ssh-ed25519 AAAA…\"")
	}
	var lines []string
	for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		pub, _, options, rest, err := ssh.ParseAuthorizedKey([]byte(line))
		if err != nil || len(options) > 0 || len(strings.TrimSpace(string(rest))) > 0 {
			return "", errors.New("each line must be one public key in authorized_keys form, e.g. \"ssh-ed25519 AAAA…\", without options")
		}
		if _, isCert := pub.(*ssh.Certificate); isCert {
			return "", errors.New("must be the host's public key, not a certificate")
		}
		lines = append(lines, strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pub))))
	}
	if len(lines) > 16 {
		return "", errors.New("must hold at most 16 keys")
	}
	return strings.Join(lines, "\n"), nil
}
