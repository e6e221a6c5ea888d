package queue_test

import (
	"testing"

	"github.com/google/uuid"

	"horizon/shared/queue"
)

func TestParseStepTaskID(t *testing.T) {
	step := uuid.MustParse("0190f0b2-7c1e-7a55-9b1c-3f0d2b8e4a11")
	for _, c := range []struct {
		id      string
		step    uuid.UUID
		attempt int
		ok      bool
	}{
		{id: queue.StepTaskID(step, 1), step: step, attempt: 1, ok: true},
		{id: queue.StepTaskID(step, 42), step: step, attempt: 42, ok: true},
		{id: "step:" + step.String() + ":0", step: step, attempt: 0, ok: true},
		{id: "run:" + step.String() + ":1"},
		{id: "step:" + step.String()},
		{id: "step:" + step.String() + ":"},
		{id: "step:" + step.String() + ":x"},
		{id: "step:not-a-uuid:1"},
		{id: "step::1"},
		{id: ""},
	} {
		t.Run(c.id, func(t *testing.T) {
			s, a, ok := queue.ParseStepTaskID(c.id)
			if ok != c.ok || (ok && (s != c.step || a != c.attempt)) {
				t.Fatalf("ParseStepTaskID(%q) = %v, %d, %v; want %v, %d, %v", c.id, s, a, ok, c.step, c.attempt, c.ok)
			}
		})
	}
}
