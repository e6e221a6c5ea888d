package horizon

import "github.com/google/uuid"

// ActionRun is what a run of kind action was asked and what it produced: the history of a
// stack's actions. Secret values are sealed JSON objects of strings.
type ActionRun struct {
	RunID           uuid.UUID
	StackID         uuid.UUID
	Action          string
	Kind            string // the template's action kind: script or terraform
	TemplateVersion int
	// ExecutionID, Job and ExecutionIndex are the machine a script action runs on.
	ExecutionID    *uuid.UUID
	Job            string
	ExecutionIndex *int
	// Parameters are the answers that are not secret; SecretParameters the others (sealed).
	Parameters       map[string]any
	SecretParameters []byte
	// Inputs are the inputs the user typed over their prefills; an input left out is resolved
	// from the stack's outputs when the action runs. SecretInputs (sealed) are those typed over a
	// prefill from a secret output.
	Inputs       map[string]any
	SecretInputs []byte
	// Outputs and SecretOutputs (sealed) are what it emitted.
	Outputs       map[string]any
	SecretOutputs []byte
}
