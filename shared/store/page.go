package store

import "github.com/google/uuid"

// MaxPageLimit bounds every list so that no request can ask for an unbounded result.
const MaxPageLimit = 200

// Page selects one page of a list ordered by id (ids are time-ordered UUIDv7, so this is
// creation order). After is the last id of the previous page; nil starts at the beginning.
type Page struct {
	Limit int
	After *uuid.UUID
}

// limit returns the number of rows to fetch: one more than asked, to learn whether there is a
// next page without a count query.
func (p Page) limit() int {
	n := p.Limit
	if n <= 0 || n > MaxPageLimit {
		n = MaxPageLimit
	}
	return n + 1
}

// cut trims the extra row fetched by limit and returns the cursor of the next page, or nil when
// this page is the last.
func cut[T any](rows []T, p Page, id func(T) uuid.UUID) ([]T, *uuid.UUID) {
	n := p.limit() - 1
	if len(rows) <= n {
		return rows, nil
	}
	rows = rows[:n]
	next := id(rows[n-1])
	return rows, &next
}
