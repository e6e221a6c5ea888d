package rstream

import (
	"fmt"
	"strconv"
	"strings"
)

// ID is a Redis stream entry id, "<ms>-<seq>". It orders entries within a stream and is the SSE
// event id Horizon sends, so a client's Last-Event-ID parses back into one. The zero ID is
// "0-0", which sorts before every entry.
type ID struct {
	MS, Seq uint64
}

// ParseID parses "<ms>-<seq>". The empty string is the zero ID (no Last-Event-ID); anything
// else that is not two decimal numbers joined by '-' is an error.
func ParseID(s string) (ID, error) {
	if s == "" {
		return ID{}, nil
	}
	ms, seq, ok := strings.Cut(s, "-")
	if !ok {
		return ID{}, fmt.Errorf("stream id %q: want <ms>-<seq>", s)
	}
	m, err := strconv.ParseUint(ms, 10, 64)
	if err != nil {
		return ID{}, fmt.Errorf("stream id %q: %w", s, err)
	}
	q, err := strconv.ParseUint(seq, 10, 64)
	if err != nil {
		return ID{}, fmt.Errorf("stream id %q: %w", s, err)
	}
	return ID{MS: m, Seq: q}, nil
}

// mustParse is ParseID for ids that Redis itself returned, which always parse; a malformed one
// reads as the zero ID.
func mustParse(s string) ID {
	id, _ := ParseID(s) // Redis only returns well-formed ids
	return id
}

// String formats the id as Redis does.
func (id ID) String() string {
	return strconv.FormatUint(id.MS, 10) + "-" + strconv.FormatUint(id.Seq, 10)
}

// IsZero reports whether id is "0-0".
func (id ID) IsZero() bool { return id == ID{} }

// Compare returns -1, 0 or +1 as id sorts before, equal to or after o.
func (id ID) Compare(o ID) int {
	switch {
	case id.MS < o.MS || id.MS == o.MS && id.Seq < o.Seq:
		return -1
	case id == o:
		return 0
	default:
		return 1
	}
}

// Less reports whether id sorts before o.
func (id ID) Less(o ID) bool { return id.Compare(o) < 0 }

// MarshalText formats the id as String does, so that it encodes as a JSON string.
func (id ID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// UnmarshalText parses what MarshalText produced.
func (id *ID) UnmarshalText(b []byte) error {
	v, err := ParseID(string(b))
	if err != nil {
		return err
	}
	*id = v
	return nil
}
