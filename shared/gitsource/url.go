package gitsource

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

// CheckURL reports whether repoURL is a repository URL the cache accepts: file://, https:// or
// ssh://, with no password, query or fragment (credentials never travel in a URL), nothing that
// git could read as an option, and no control characters or spaces. The error wraps
// ErrInvalidURL.
func CheckURL(repoURL string) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidURL, fmt.Sprintf(format, args...))
	}
	if repoURL == "" {
		return bad("empty")
	}
	if len(repoURL) > 2048 {
		return bad("longer than 2048 characters")
	}
	if strings.HasPrefix(repoURL, "-") {
		return bad("must not start with '-'")
	}
	if strings.ContainsFunc(repoURL, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return bad("must not contain spaces or control characters")
	}
	if strings.Contains(repoURL, "::") {
		return bad("transport prefixes such as ext:: are not allowed")
	}
	u, err := url.Parse(repoURL)
	if err != nil {
		return bad("does not parse")
	}
	switch u.Scheme {
	case "https", "ssh":
		if u.Host == "" || u.Hostname() == "" {
			return bad("needs a host")
		}
		if strings.HasPrefix(u.Hostname(), "-") {
			return bad("host must not start with '-'")
		}
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return bad("a file URL has no host: file:///path/to/repo")
		}
	default:
		return bad("scheme must be https, ssh or file (write scp-like git@host:path as ssh://git@host/path)")
	}
	if _, hasPassword := u.User.Password(); hasPassword || (u.Scheme != "ssh" && u.User != nil) {
		return bad("credentials do not belong in the URL; register them for the repository")
	}
	if u.User != nil && strings.HasPrefix(u.User.Username(), "-") {
		return bad("user must not start with '-'")
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(repoURL, "#") {
		return bad("must not have a query or a fragment")
	}
	if u.Path == "" || u.Path == "/" {
		return bad("needs a repository path")
	}
	return nil
}

// CheckBranch reports whether name is a valid branch name, by the rules of
// git check-ref-format --branch (plus: at most 255 bytes).
func CheckBranch(name string) error {
	bad := func(why string) error { return fmt.Errorf("invalid branch name: %s", why) }
	switch {
	case name == "":
		return bad("empty")
	case len(name) > 255:
		return bad("longer than 255 bytes")
	case name == "@" || name == "HEAD":
		return bad(name + " is not a branch")
	case strings.HasPrefix(name, "-"):
		return bad("must not start with '-'")
	case strings.HasPrefix(name, "/") || strings.HasSuffix(name, "/") || strings.Contains(name, "//"):
		return bad("must not start or end with '/' or contain '//'")
	case strings.HasSuffix(name, ".") || strings.Contains(name, ".."):
		return bad("must not end with '.' or contain '..'")
	case strings.Contains(name, "@{"):
		return bad("must not contain '@{'")
	case strings.ContainsFunc(name, func(r rune) bool { return r <= ' ' || r == 0x7f || strings.ContainsRune(`~^:?*[\`, r) }):
		return bad(`must not contain spaces, control characters or any of ~^:?*[\`)
	}
	for _, part := range strings.Split(name, "/") {
		if strings.HasPrefix(part, ".") || strings.HasSuffix(part, ".lock") {
			return bad("no component may start with '.' or end with '.lock'")
		}
	}
	return nil
}

var commitRE = regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`)

// checkCommit accepts only a full, lowercase object id: an abbreviation or a ref name would
// make a tree's identity depend on the repository's state.
func checkCommit(commit string) error {
	if !commitRE.MatchString(commit) {
		return fmt.Errorf("%w: %q is not a full commit id", ErrCommitNotFound, commit)
	}
	return nil
}
