package stacks

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"horizon/shared/horizon"
)

// pveTag is PVE's $PVE_TAG_RE (pve-common, JSONSchema.pm), which it matches case-insensitively.
var pveTag = regexp.MustCompile(`(?i)^[a-z0-9_][a-z0-9_\-+.]*$`)

// FuzzLabels checks that labels the API accepts survive the trip to Proxmox and back: the tag
// string the workers write (horizon.VMTags joined with ";") is accepted by PVE, and PVE's
// reading of it (split at ';', ',' and white space, lower-cased) gives back exactly the tags
// written, so a label can neither be refused at deploy time nor come back as another tag.
func FuzzLabels(f *testing.F) {
	f.Add("web\ntier-1")
	f.Add("a;b")
	f.Add("UPPER")
	f.Add("x y")
	f.Add("_u.v+w-")

	f.Fuzz(func(t *testing.T, list string) {
		labels := strings.Split(list, "\n")
		var p horizon.Problems
		checkLabels(&p, labels)
		if p.Err() != nil {
			return
		}
		tags := horizon.VMTags(horizon.Stack{ID: uuid.New(), Labels: labels})
		written := strings.Join(tags, ";")
		read := strings.FieldsFunc(written, func(r rune) bool { return r == ';' || r == ',' || r == ' ' || r == '\t' || r == '\n' })
		for i, tag := range read {
			if !pveTag.MatchString(tag) {
				t.Fatalf("PVE refuses tag %q of %q", tag, written)
			}
			read[i] = strings.ToLower(tag)
		}
		if !slices.Equal(read, tags) {
			t.Fatalf("labels %q: wrote %q, PVE reads %q", labels, written, read)
		}
	})
}
