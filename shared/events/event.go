package events

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"horizon/shared/secrets"
)

// Kind is what an event is about.
type Kind string

// The kinds of object whose state changes are published.
const (
	Stack Kind = "stack"
	Run   Kind = "run"
	Step  Kind = "step"
	ISO   Kind = "iso"
	// Drift events say that a stack's machines drifted from what Horizon set (State
	// DriftFoundState) or no longer do (DriftClearedState); ID is the stack's.
	Drift Kind = "drift"
)

// The states of drift events, and the names under which they are announced (webhooks and
// other notifications name an event by these).
const (
	DriftFoundState   = "found"
	DriftClearedState = "cleared"
	DriftFound        = "stack.drift.found"
	DriftCleared      = "stack.drift.cleared"
)

// Name is the event's announced name: "stack.drift.found" and "stack.drift.cleared" for
// drift events, "<type>.<state>" otherwise (e.g. "stack.deployed").
func (e Event) Name() string {
	if e.Type == Drift {
		return "stack.drift." + e.State
	}
	return string(e.Type) + "." + e.State
}

// Event is one state change. It carries ids, states and template identifiers only — never
// free text, so never a secret — except Error, whose only constructor masks it. Its JSON form
// is what the events stream stores and the SSE endpoint sends:
//
//	{"type":"step","id":"…","stack_id":"…","team_id":"…","run_id":"…","state":"failed",
//	 "at":"…","job":"worker","execution":2,"error":"exit status 1"}
type Event struct {
	Type Kind      `json:"type"`
	ID   uuid.UUID `json:"id"` // the object's id
	// StackID and TeamID say whose the object is; the API filters on them. Both are required
	// except for ISO events and the run and step events of ISO runs (catalogue objects, not a
	// team's), which carry ISOID instead.
	StackID uuid.UUID `json:"stack_id,omitzero"`
	TeamID  uuid.UUID `json:"team_id,omitzero"`
	ISOID   uuid.UUID `json:"iso_id,omitzero"`
	RunID   uuid.UUID `json:"run_id,omitzero"` // for run and step events
	State   string    `json:"state"`           // the new state, as named in shared/horizon
	At      time.Time `json:"at"`              // when it changed; Publish sets it when zero
	// Job and Execution locate a step event in the pipeline. Job is a template identifier.
	Job       string    `json:"job,omitempty"`
	Execution *int      `json:"execution,omitempty"`
	Error     ErrorLine `json:"error,omitzero"` // the first line of a failure
}

var (
	stateRE = regexp.MustCompile(`^[a-z_]{1,32}$`)
	jobRE   = regexp.MustCompile(`^[A-Za-z0-9_.-]{0,64}$`)
)

// validate reports every problem of e at once.
func (e Event) validate() error {
	var errs []error
	switch e.Type {
	case Stack, Drift:
		if e.StackID == uuid.Nil || e.TeamID == uuid.Nil {
			errs = append(errs, fmt.Errorf("%s event without stack_id and team_id", e.Type))
		}
	case Run, Step:
		if (e.StackID == uuid.Nil || e.TeamID == uuid.Nil) == (e.ISOID == uuid.Nil) {
			errs = append(errs, fmt.Errorf("%s event without stack_id and team_id, or iso_id, or with both", e.Type))
		}
	case ISO:
	default:
		errs = append(errs, fmt.Errorf("event type %q: want stack, run, step, iso or drift", e.Type))
	}
	if e.ID == uuid.Nil {
		errs = append(errs, errors.New("event without id"))
	}
	if !stateRE.MatchString(e.State) {
		errs = append(errs, fmt.Errorf("event state %q: want a state name", e.State))
	}
	if !jobRE.MatchString(e.Job) {
		errs = append(errs, fmt.Errorf("event job %q: want a template identifier", e.Job))
	}
	return errors.Join(errs...)
}

// MaxErrorLine bounds an ErrorLine, in bytes.
const MaxErrorLine = 512

// ErrorLine is the first line of an error, masked. The only way to make one that is not
// empty is MaskError (UnmarshalJSON aside, which reads what was published), so an event
// cannot carry an unmasked error by accident.
type ErrorLine struct{ s string }

// MaskError returns the first non-blank line of text, masked with m, trimmed of white space
// and cut to MaxErrorLine bytes (after masking, so that a cut cannot expose part of a secret).
// m must be the Masker of the step the error comes from.
func MaskError(m *secrets.Masker, text string) ErrorLine {
	for line := range strings.Lines(text) {
		if line = strings.TrimSpace(line); line != "" {
			text = line
			break
		}
	}
	s := strings.TrimSpace(m.Mask(strings.TrimSpace(text)))
	if len(s) > MaxErrorLine {
		i := MaxErrorLine
		for i > 0 && !utf8.RuneStart(s[i]) {
			i--
		}
		s = s[:i]
	}
	return ErrorLine{s: s}
}

// String returns the masked line.
func (e ErrorLine) String() string { return e.s }

// IsZero reports whether there is no error line.
func (e ErrorLine) IsZero() bool { return e.s == "" }

// MarshalJSON encodes the line as a JSON string.
func (e ErrorLine) MarshalJSON() ([]byte, error) { return json.Marshal(e.s) }

// UnmarshalJSON decodes a JSON string. It exists to read published events back.
func (e *ErrorLine) UnmarshalJSON(b []byte) error { return json.Unmarshal(b, &e.s) }
