package pve

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// tagRE is PVE's $PVE_TAG_RE (pve-common JSONSchema.pm), matched case-insensitively.
var tagRE = regexp.MustCompile(`(?i)^[a-z0-9_][a-z0-9_\-+.]*$`)

// normalizeTags turns a pve-tag-list into the form PVE stores with the default datacenter
// tag-style: split at ';', ',' and whitespace, lower-cased, de-duplicated, sorted, joined
// with ';'. An invalid tag fails the whole value.
func normalizeTags(v string) (string, error) {
	var tags []string
	for _, t := range splitList(v) {
		if !tagRE.MatchString(t) {
			return "", fmt.Errorf("invalid format - invalid characters in tag '%s'", t)
		}
		tags = append(tags, strings.ToLower(t))
	}
	slices.Sort(tags)
	return strings.Join(slices.Compact(tags), ";"), nil
}

// splitTags splits a stored tag list.
func splitTags(v string) []string {
	if v == "" {
		return nil
	}
	return strings.Split(v, ";")
}
