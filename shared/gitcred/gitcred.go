// Package gitcred turns the git credentials admins register (table git_credentials) into the
// gitsource.Credentials a repository needs, and holds the rules both sides of that share: what a
// URL prefix may be, when a prefix covers a repository URL, and the purpose strings the secrets
// are sealed under. The API (template uploads, "changed since pinned") and the workers (pinning
// commits for stacks, force retry) both call For.
//
// Decisions:
//
//   - A credential covers the repository URLs its url_prefix starts, at a '/' boundary: the
//     prefix equals the URL, ends with '/', or is followed in the URL by '/'. A plain string
//     prefix would hand the token of https://git.example.org to
//     https://git.example.org.attacker.test/x. Among the credentials covering a URL the longest
//     prefix wins, so a repository can have its own deploy key under a host-wide token.
//   - The kind follows the scheme: an https:// prefix holds a username and token, an ssh://
//     prefix a private key and the server's pinned host key. file:// repositories need none.
//   - Secrets are sealed with secrets.Box under TokenPurpose and SSHKeyPurpose, opened only
//     here, and carried as secrets.Value, which never prints.
package gitcred

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"horizon/shared/gitsource"
	"horizon/shared/horizon"
	"horizon/shared/secrets"
	"horizon/shared/store"
)

// Purposes bind the sealed secrets to their columns (see secrets.Box.Seal).
const (
	TokenPurpose  = "git_credentials.token"
	SSHKeyPurpose = "git_credentials.ssh_private_key"
)

// Matches reports whether a credential with prefix covers repoURL: repoURL starts with prefix and
// the prefix ends at a '/' boundary (see the package doc).
func Matches(prefix, repoURL string) bool {
	if prefix == "" || !strings.HasPrefix(repoURL, prefix) {
		return false
	}
	return len(repoURL) == len(prefix) || strings.HasSuffix(prefix, "/") || repoURL[len(prefix)] == '/'
}

// CheckPrefix reports why s cannot be a credential's URL prefix, or returns nil: an https:// or
// ssh:// URL with a host, and no password, query, fragment, spaces or control characters (and
// for https, no user at all: the user name is a field of its own). The kind it returns follows
// the scheme.
func CheckPrefix(s string) (kind string, err error) {
	switch {
	case s == "":
		return "", fmt.Errorf("is required")
	case len(s) > 2048:
		return "", fmt.Errorf("must be at most 2048 characters")
	case strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return "", fmt.Errorf("must not contain spaces or control characters")
	}
	u, perr := url.Parse(s)
	if perr != nil || u.Opaque != "" {
		return "", fmt.Errorf("must be a URL like https://git.example.org/infra/ or ssh://git@git.example.org/infra/")
	}
	switch u.Scheme {
	case "https":
		kind = horizon.GitCredentialHTTPS
		if u.User != nil {
			return "", fmt.Errorf("must not hold a user or password: give the user name as username")
		}
	case "ssh":
		kind = horizon.GitCredentialSSH
		if _, has := u.User.Password(); has {
			return "", fmt.Errorf("must not hold a password")
		}
	default:
		return "", fmt.Errorf("must be an https:// or ssh:// URL (file:// repositories need no credentials)")
	}
	if u.Hostname() == "" || strings.HasPrefix(u.Hostname(), "-") {
		return "", fmt.Errorf("needs a host")
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(s, "#") {
		return "", fmt.Errorf("must not have a query or a fragment")
	}
	return kind, nil
}

// For returns the credentials of each of repos that some registered credential covers (the one
// with the longest prefix); repositories without one are absent from the map, and are accessed
// anonymously. A credential whose secret does not open (another HORIZON_SECRET_KEY) is an error.
func For(ctx context.Context, q store.Querier, box *secrets.Box, repos []string) (map[string]gitsource.Credentials, error) {
	out := map[string]gitsource.Credentials{}
	for _, repo := range repos {
		cands, err := store.GitCredentialsPrefixing(ctx, q, repo)
		if err != nil {
			return nil, fmt.Errorf("git credentials for %s: %w", repo, err)
		}
		for _, g := range cands {
			if !Matches(g.URLPrefix, repo) {
				continue
			}
			creds, err := open(box, g)
			if err != nil {
				return nil, err
			}
			out[repo] = creds
			break
		}
	}
	return out, nil
}

func open(box *secrets.Box, g horizon.GitCredential) (gitsource.Credentials, error) {
	switch g.Kind {
	case horizon.GitCredentialHTTPS:
		tok, err := box.OpenString(TokenPurpose, g.Token)
		if err != nil {
			return gitsource.Credentials{}, fmt.Errorf("open token of git credential %s: %w", g.Name, err)
		}
		return gitsource.Credentials{Username: g.Username, Token: tok}, nil
	case horizon.GitCredentialSSH:
		key, err := box.OpenString(SSHKeyPurpose, g.SSHPrivateKey)
		if err != nil {
			return gitsource.Credentials{}, fmt.Errorf("open ssh key of git credential %s: %w", g.Name, err)
		}
		return gitsource.Credentials{SSHKey: key, SSHHostKey: g.SSHHostKey}, nil
	}
	return gitsource.Credentials{}, fmt.Errorf("git credential %s has unknown kind %q", g.Name, g.Kind)
}
