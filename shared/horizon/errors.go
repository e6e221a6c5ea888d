package horizon

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Sentinel errors that callers branch on with errors.Is. The API's error handler maps each one to
// its HTTP status; the store translates driver errors into them.
var (
	// ErrNotFound: the object does not exist, or belongs to a team the caller cannot see. The two
	// cases are deliberately indistinguishable.
	ErrNotFound = errors.New("not found")
	// ErrConflict: the write collides with existing data (a unique name, an attached address).
	ErrConflict = errors.New("conflict")
	// ErrBusy: the object has work in progress that the request would interfere with.
	ErrBusy = errors.New("busy")
	// ErrStale: the caller's If-Match version is no longer the object's version.
	ErrStale = errors.New("stale version")
	// ErrForbidden: the caller is authenticated but its role does not allow the operation.
	ErrForbidden = errors.New("forbidden")
)

// ConflictError is a write that collides with existing data, named by what it protects. It
// wraps ErrConflict.
type ConflictError struct {
	// Field is the input field whose value is taken ("name", "ip"), when known.
	Field string
	// Constraint is the database constraint that refused the write, for logs.
	Constraint string
}

func (e *ConflictError) Error() string {
	if e.Field != "" {
		return e.Field + " already exists"
	}
	return "conflict on " + e.Constraint
}

func (e *ConflictError) Unwrap() error { return ErrConflict }

// InUseError refuses to delete a catalogue object that something still uses. Users names each
// user as an operator would look for it ("environment prod", "stack web"); history (removed
// stacks, removed ISOs) never counts. It wraps ErrConflict.
type InUseError struct {
	Users []string
}

func (e *InUseError) Error() string { return "in use by " + strings.Join(e.Users, ", ") }

func (e *InUseError) Unwrap() error { return ErrConflict }

// FieldError is one problem with one input field. Field is the path as the client sent it, e.g.
// "cidr", "dns[1]" or "phases[1].jobs[0].inputs.join_command"; an empty Field means the whole
// document.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// ValidationError carries every problem found in one input. Validators collect all problems
// before returning so that a client can fix them in one round trip.
type ValidationError struct {
	Fields []FieldError
}

func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Fields))
	for i, f := range e.Fields {
		if f.Field == "" {
			parts[i] = f.Message
			continue
		}
		parts[i] = f.Field + ": " + f.Message
	}
	return "invalid input: " + strings.Join(parts, "; ")
}

// Problems accumulates field errors. The zero value is ready to use.
type Problems struct {
	fields []FieldError
}

// Add records a problem with field.
func (p *Problems) Add(field, format string, args ...any) {
	p.fields = append(p.fields, FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
}

// Merge adds every problem of err if it is a *ValidationError, prefixing each field with prefix
// (joined with a dot). It reports whether err was a validation error; other errors are left to
// the caller.
func (p *Problems) Merge(prefix string, err error) bool {
	var ve *ValidationError
	if !errors.As(err, &ve) {
		return false
	}
	for _, f := range ve.Fields {
		p.fields = append(p.fields, FieldError{Field: JoinPath(prefix, f.Field), Message: f.Message})
	}
	return true
}

// Empty reports whether no problem was recorded.
func (p *Problems) Empty() bool { return len(p.fields) == 0 }

// Err returns nil when no problem was recorded, otherwise a *ValidationError with the problems in
// the order they were added.
func (p *Problems) Err() error {
	if len(p.fields) == 0 {
		return nil
	}
	return &ValidationError{Fields: append([]FieldError(nil), p.fields...)}
}

// SortedErr is Err with the problems sorted by field, for validators whose traversal order is not
// meaningful (map iteration).
func (p *Problems) SortedErr() error {
	sort.SliceStable(p.fields, func(i, j int) bool { return p.fields[i].Field < p.fields[j].Field })
	return p.Err()
}

// Invalid returns a *ValidationError with a single problem.
func Invalid(field, format string, args ...any) error {
	var p Problems
	p.Add(field, format, args...)
	return p.Err()
}

// JoinPath joins a field path prefix and a suffix: JoinPath("a", "b") is "a.b",
// JoinPath("a", "[0].b") is "a[0].b", and an empty side yields the other.
func JoinPath(prefix, field string) string {
	switch {
	case prefix == "":
		return field
	case field == "":
		return prefix
	case strings.HasPrefix(field, "["):
		return prefix + field
	default:
		return prefix + "." + field
	}
}
