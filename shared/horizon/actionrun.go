package horizon

import (
	"fmt"
	"time"

	"github.com/google/uuid"
)

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
	// InstanceID is the terraform action instance the run made or, Undo, undoes.
	InstanceID *uuid.UUID
	Undo       bool
}

// ActionInstance is what a terraform action's run left: its module applied in a workspace of
// its own, undone on its own (ActionInstanceWorkspace). Its answers and outputs are those of the
// run that made it (RunID).
type ActionInstance struct {
	ID              uuid.UUID
	StackID         uuid.UUID
	Number          int
	Action          string
	TemplateVersion int
	Commit          string
	RunID           uuid.UUID
	CreatedBy       *uuid.UUID
	CreatedAt       time.Time
	AppliedAt       *time.Time
	// Variables are what the apply gave Terraform, sealed whole as a JSON object (they may hold
	// secrets); nil until the apply got that far.
	Variables []byte
	Ended     *string
	EndedAt   *time.Time
	// State is derived when read: applying, active, failed, undoing, undone or abandoned.
	State string
}

// The states of an action instance.
const (
	InstanceApplying  = "applying"
	InstanceActive    = "active"
	InstanceFailed    = "failed" // its apply failed or was canceled: it may hold part of what it made
	InstanceUndoing   = "undoing"
	InstanceUndone    = "undone"
	InstanceAbandoned = "abandoned"
)

// ActionInstanceWorkspace is the Terraform workspace of an action instance: its own, apart from
// the stack's executions'.
func ActionInstanceWorkspace(stack uuid.UUID, action string, number int) string {
	return fmt.Sprintf("s%s-action-%s-%d", stack, action, number)
}

// ActionInstanceName is the horizon_name of an instance: "<stack>-<action>-<number>", one DNS
// label like a machine's name.
func ActionInstanceName(stack, action string, number int) string {
	return VMName(stack, action, number)
}
