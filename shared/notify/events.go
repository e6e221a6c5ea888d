package notify

import (
	"fmt"
	"slices"
)

// EventType names what happened. The names are part of the API (subscriptions list them).
type EventType string

// The event types. Adding one is one line here (and the store call that emits it).
const (
	RunFinished       EventType = "run.finished"
	StackStateChanged EventType = "stack.state_changed"
	ISOBuilt          EventType = "iso.built"
	ISOFailed         EventType = "iso.failed"
	ActionFinished    EventType = "action.finished"
	// DriftFound and DriftCleared: a stack gained its first unaccepted drift finding, or lost
	// its last (fixed, gone, or accepted).
	DriftFound   EventType = "stack.drift.found"
	DriftCleared EventType = "stack.drift.cleared"
	// Test is what POST /v1/webhooks/{id}/test and enabling a subscription send; it is never
	// subscribed to.
	Test EventType = "webhook.test"
)

// EventTypes returns the event types a subscription may ask for.
func EventTypes() []EventType {
	return []EventType{RunFinished, StackStateChanged, ISOBuilt, ISOFailed, ActionFinished, DriftFound, DriftCleared}
}

// Valid reports whether t may be subscribed to.
func (t EventType) Valid() bool { return slices.Contains(EventTypes(), t) }

// CheckEvents returns the first problem of a subscription's events: none, an unknown one
// (named), or a repeated one.
func CheckEvents(events []string) (field, message string, ok bool) {
	if len(events) == 0 {
		return "events", "must name at least one event", false
	}
	seen := map[string]bool{}
	for i, e := range events {
		f := fmt.Sprintf("events[%d]", i)
		if !EventType(e).Valid() {
			return f, fmt.Sprintf("%q is not an event; events are %v", e, EventTypes()), false
		}
		if seen[e] {
			return f, fmt.Sprintf("%q is listed twice", e), false
		}
		seen[e] = true
	}
	return "", "", true
}
