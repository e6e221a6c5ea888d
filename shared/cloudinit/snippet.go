package cloudinit

import (
	"fmt"
	"regexp"
	"strings"
)

// maxSnippetName bounds a snippet file name; PVE volume names have no documented limit, but
// file systems allow 255 bytes and a shorter name stays readable in the PVE UI.
const maxSnippetName = 120

var (
	unsafeRun   = regexp.MustCompile(`[^a-z0-9._-]+`)
	storageIDRE = regexp.MustCompile(`^[a-z][a-z0-9._-]*[a-z0-9]$`) // PVE's pve-storage-id format
)

// SnippetName returns a snippet file name made of parts joined by "-", ending in ".yaml", e.g.
// SnippetName("horizon", "s12", "master", "0", "user") is "horizon-s12-master-0-user.yaml".
// Each part is lower-cased and every run of characters other than a-z, 0-9, '.', '_' and '-'
// becomes "-", so the name is safe in a PVE volume id and in the cicustom property string (no
// ',', '=', ':' or '/'). Distinct parts can map to one name ("A b" and "a-b"): build names from
// ids, not from free text. An over-long name is cut to 120 bytes.
func SnippetName(parts ...string) string {
	clean := make([]string, 0, len(parts))
	for _, p := range parts {
		p = strings.Trim(unsafeRun.ReplaceAllString(strings.ToLower(p), "-"), "-.")
		if p != "" {
			clean = append(clean, p)
		}
	}
	name := strings.Join(clean, "-")
	if name == "" {
		name = "snippet"
	}
	if len(name) > maxSnippetName-len(".yaml") {
		name = strings.TrimRight(name[:maxSnippetName-len(".yaml")], "-.")
	}
	return name + ".yaml"
}

// VolumeID returns the PVE volume id of snippet file name on storage,
// "<storage>:snippets/<name>", as cicustom and the storage content API expect. It returns an
// error when storage is not a PVE storage id or name is not one SnippetName could return.
func VolumeID(storage, name string) (string, error) {
	if !storageIDRE.MatchString(storage) {
		return "", fmt.Errorf("storage %q is not a PVE storage id", storage)
	}
	if name == "" || SnippetName(strings.TrimSuffix(name, ".yaml")) != name {
		return "", fmt.Errorf("snippet name %q is not safe in a volume id", name)
	}
	return storage + ":snippets/" + name, nil
}
