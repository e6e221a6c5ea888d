package api

import (
	"fmt"

	"github.com/google/uuid"

	"horizon/shared/horizon"
)

// CheckRefs records a problem for each id of a list field that repeats or is among missing (the
// ids the store found no object for), e.g. field "teams", what "a team".
func CheckRefs(p *horizon.Problems, field string, ids, missing []uuid.UUID, what string) {
	gone := make(map[uuid.UUID]bool, len(missing))
	for _, m := range missing {
		gone[m] = true
	}
	seen := make(map[uuid.UUID]bool, len(ids))
	for i, id := range ids {
		f := fmt.Sprintf("%s[%d]", field, i)
		if seen[id] {
			p.Add(f, "is listed twice")
		}
		seen[id] = true
		if gone[id] {
			p.Add(f, "is not %s", what)
		}
	}
}
