package template

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// Hash returns a stable content hash of the definition, "sha256:<hex>", computed over its
// canonical JSON: encoding/json's output, which writes struct fields in declaration order and
// map keys sorted, so formatting, comments, key order and YAML-or-JSON make no difference.
// Numbers are float64 and integers stay within ±2^53 (Validate), so a definition stored as JSON
// and read back hashes the same.
//
// Whether a stack's template "changed since it was pinned" (Compare) combines two facts: the
// hash of the template's current version differs from the pinned version's hash, or some job's
// branch now resolves to a commit other than the one the stack pinned.
func (d *Definition) Hash() string {
	b, err := json.Marshal(d)
	if err != nil {
		// Every field is a string, number, bool, slice or map of those: Marshal cannot fail
		// unless a Go caller put something else in Default or Enum.
		panic("template: hash: " + err.Error())
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}
