package horizon

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// StackState is a stack's lifecycle state. The names are API: the UI and bots use them.
type StackState string

const (
	StackDraft     StackState = "draft"
	StackDeploying StackState = "deploying"
	StackDeployed  StackState = "deployed"
	StackUpdating  StackState = "updating"
	StackFailed    StackState = "failed"
	StackRemoving  StackState = "removing"
	StackRemoved   StackState = "removed"
)

// Busy reports whether a run is in progress on a stack in this state.
func (s StackState) Busy() bool {
	return s == StackDeploying || s == StackUpdating || s == StackRemoving
}

// RunState is a run's state.
type RunState string

const (
	RunQueued    RunState = "queued"
	RunRunning   RunState = "running"
	RunCanceling RunState = "canceling"
	RunSucceeded RunState = "succeeded"
	RunFailed    RunState = "failed"
	RunCanceled  RunState = "canceled"
)

// Terminal reports whether the run has ended.
func (s RunState) Terminal() bool { return s == RunSucceeded || s == RunFailed || s == RunCanceled }

// RunKind says what a run does.
type RunKind string

const (
	RunDeploy   RunKind = "deploy"
	RunReapply  RunKind = "reapply"
	RunRetry    RunKind = "retry"
	RunRunAgain RunKind = "run_again"
	RunUpgrade  RunKind = "upgrade"
	RunRemove   RunKind = "remove"
	// RunAction runs one of the actions the stack's template offers; the stack returns to the
	// state it was in, whatever the action's outcome.
	RunAction RunKind = "action"
)

// StepState is a step's state. Held means the step never ran because an earlier phase failed.
type StepState string

const (
	StepPending   StepState = "pending"
	StepQueued    StepState = "queued"
	StepRunning   StepState = "running"
	StepSucceeded StepState = "succeeded"
	StepFailed    StepState = "failed"
	StepHeld      StepState = "held"
	StepCanceled  StepState = "canceled"
	StepSkipped   StepState = "skipped"
)

// Terminal reports whether the step will not run (again) in its run.
func (s StepState) Terminal() bool {
	switch s {
	case StepSucceeded, StepFailed, StepHeld, StepCanceled, StepSkipped:
		return true
	}
	return false
}

// StepKind says what a step does.
type StepKind string

const (
	// StepApply builds or updates an execution: cloud-init upload and Terraform apply under the
	// node's gate, then the job's scripts.
	StepApply StepKind = "apply"
	// StepDestroy removes an execution: cleanup scripts, then Terraform destroy.
	StepDestroy StepKind = "destroy"
	// StepActionScript runs a script action over SSH on the one machine of its job the user
	// chose (the step's execution), like a job's scripts. It takes no node gate.
	StepActionScript StepKind = "action_script"
	// StepActionApply applies a terraform action's module in its instance's own workspace (the
	// step's ActionInstanceID); StepActionDestroy undoes an instance (terraform destroy with the
	// code of the template version that made it). Neither takes a node gate: an action builds
	// no machine.
	StepActionApply   StepKind = "action_apply"
	StepActionDestroy StepKind = "action_destroy"

	// StepNagiosPublish writes the stack's Nagios object file as its executions now are (no
	// machine choosing Nagios: the file is removed), in a last phase of its own after every
	// machine succeeded; StepNagiosUnpublish removes it, in the first phase of a removal. Both
	// take the Nagios server's gate (ServerID is the Nagios server, Node NagiosGateNode), so
	// that publishes to one server never overlap.
	StepNagiosPublish   StepKind = "nagios_publish"
	StepNagiosUnpublish StepKind = "nagios_unpublish"
)

// Action reports whether a step of this kind runs a template action (task action:run).
func (k StepKind) Action() bool {
	return k == StepActionScript || k == StepActionApply || k == StepActionDestroy
}

// NagiosGateNode is the Node of a Nagios step: with the Nagios server's id as ServerID, it names
// that server's gate (a line of its own, apart from every Proxmox node's).
const NagiosGateNode = "nagios"

// Nagios reports whether steps of this kind publish to Nagios (and run as nagios:publish tasks).
func (k StepKind) Nagios() bool { return k == StepNagiosPublish || k == StepNagiosUnpublish }

// Stack is a deployed (or draft) application.
type Stack struct {
	ID              uuid.UUID
	TeamID          uuid.UUID
	Name            string
	Description     string
	Labels          []string
	EnvironmentID   uuid.UUID
	TemplateID      uuid.UUID
	TemplateVersion int
	State           StackState
	DeployedAt      *time.Time
	Version         int64
	CreatedBy       *uuid.UUID
	CreatedAt       time.Time
	UpdatedAt       time.Time
	// LastRun is the kind of the stack's latest run, if any.
	LastRun *RunKind
	// ActionCommits are the commits a force retry re-pinned terraform actions to (action →
	// commit); an action not here runs at the commit its template version pinned.
	ActionCommits map[string]string
}

// ActionCommit is the commit the stack runs terraform action name at: its force-retry re-pin,
// else the one version pinned ("" when neither has one).
func (s Stack) ActionCommit(version TemplateVersion, name string) string {
	if c := s.ActionCommits[name]; c != "" {
		return c
	}
	return version.ActionCommits[name]
}

// RemovalFailed reports whether the stack is failed because its removal failed: only
// finishing the removal (retry, remove again) or force-removing it is then allowed.
func (s Stack) RemovalFailed() bool {
	return s.State == StackFailed && s.LastRun != nil && *s.LastRun == RunRemove
}

// ExecutionConfig is a user's answers for one execution: the parameters that are not secret
// and what the machine is attached to. Secret parameters are kept sealed apart.
type ExecutionConfig struct {
	Parameters      map[string]any `json:"parameters,omitempty"`
	AddressID       *uuid.UUID     `json:"address_id,omitempty"`
	SSHKeyID        *uuid.UUID     `json:"ssh_key_id,omitempty"`
	ProxmoxServerID *uuid.UUID     `json:"proxmox_server_id,omitempty"`
	Node            string         `json:"node,omitempty"`
	Pool            string         `json:"pool,omitempty"`
	ISOID           *uuid.UUID     `json:"iso_id,omitempty"`
	NagiosHostgroup string         `json:"nagios_hostgroup,omitempty"`
	NodeExporter    bool           `json:"node_exporter,omitempty"`
	StartupOrder    *int           `json:"startup_order,omitempty"`
	// SecretParameterNames are the secret parameters that have a value (sealed apart), so that
	// they can be shown as set without opening them.
	SecretParameterNames []string `json:"secret_parameter_names,omitempty"`
}

// ExecutionState is "active", "removing" (its destroy is planned) or "removed".
type ExecutionState string

const (
	ExecutionActive   ExecutionState = "active"
	ExecutionRemoving ExecutionState = "removing"
	ExecutionRemoved  ExecutionState = "removed"
)

// Execution is one VM (or one run of a non-machine job) of a stack's job.
type Execution struct {
	ID                 uuid.UUID
	StackID            uuid.UUID
	Job                string
	Index              int
	Config             ExecutionConfig
	SecretParameters   []byte // sealed JSON object, purpose "executions.secret_parameters"
	Commit             string
	AppliedHash        *string
	Outputs            map[string]any
	SecretOutputs      []byte // sealed JSON object, purpose "executions.secret_outputs"
	ServerID           *uuid.UUID
	Node               *string
	VMID               *int
	HostKey            []byte // sealed private key, purpose "executions.host_key"
	HostKeyFingerprint *string
	State              ExecutionState
	CreatedAt          time.Time
	UpdatedAt          time.Time
	// CleanedUpAt is when its cleanup scripts last succeeded (before a destroy).
	CleanedUpAt *time.Time
	// VMName is the machine's name, reserved in its cluster at its first deploy and kept
	// (nil before, and for executions deployed before names were reserved).
	VMName *string
}

// Run is one unit of user intent on a stack (StackID set) or on an ISO (ISOID set); never
// both.
type Run struct {
	ID         uuid.UUID
	StackID    *uuid.UUID
	ISOID      *uuid.UUID
	Kind       RunKind
	State      RunState
	ActorID    *uuid.UUID
	Error      *string
	CreatedAt  time.Time
	StartedAt  *time.Time
	FinishedAt *time.Time
}

// Step is one unit of work of a run.
type Step struct {
	ID             uuid.UUID
	RunID          uuid.UUID
	Position       int
	Phase          int
	PhaseName      string
	Job            string
	ExecutionID    *uuid.UUID
	ExecutionIndex *int
	Kind           StepKind
	State          StepState
	Attempt        int
	ServerID       *uuid.UUID
	Node           *string
	Fence          *int64
	Reason         *string
	Error          *string
	ReadyAt        *time.Time
	StartedAt      *time.Time
	FinishedAt     *time.Time
	HeartbeatAt    *time.Time
	GateWaitMS     int64
	// TemplateVersion, when set, is the template version whose code the step runs (the destroy
	// of a job an upgrade removed); otherwise the stack's.
	TemplateVersion *int
	// OnlyIfChanged: the step is there because a job it depends on changes; it is skipped if
	// its own answers turn out unchanged.
	OnlyIfChanged bool
	// ActionInstanceID is the terraform action instance an action_apply or action_destroy step
	// works on.
	ActionInstanceID *uuid.UUID
}

// TakesGate reports whether the step builds on a node, under that node's gate (the
// one-build-per-node rule): applies placed on a node, and the ISO stages placed on one (those
// that build the VM; preflight and the download have no node). Destroys do not upload and do
// not wait. Nagios steps take their Nagios server's gate (see NagiosGateNode).
func (s Step) TakesGate() bool {
	return (s.Kind == StepApply || s.Kind.ISO() || s.Kind.Nagios()) && s.ServerID != nil && s.Node != nil
}

// MayBeUnneeded reports whether the step's work may turn out to have nothing to do once it is
// loaded: an apply there only in case its inputs changed (OnlyIfChanged), or a Nagios publish
// that may have no machine to publish. Such a step looks at its work when it first asks for its
// gate, to leave the line at once rather than when it is next; any other waits for its turn
// without reading. A step kind's Unneeded must answer "" for a step this reports false for.
func (s Step) MayBeUnneeded() bool { return s.OnlyIfChanged || s.Kind.Nagios() }

// StateChange is one entry of a stack's state history.
type StateChange struct {
	ID      uuid.UUID
	StackID uuid.UUID
	RunID   *uuid.UUID
	From    *StackState
	To      StackState
	ActorID *uuid.UUID
	// ActorName is the acting user's name when read with the history (nil for Horizon).
	ActorName *string
	Error     *string
	At        time.Time
}

// VMName is the name of an execution's machine: "<stack>-<job>-<index>", reduced to one DNS
// label (lower case, letters, digits and hyphens, at most 63 characters). It is the VM's name in
// Proxmox and its hostname. A stack part too long for the label is cut and followed by a short
// hash of the whole stack name, and "-<job>-<index>" is always kept: the machines of one stack
// never share a name, and two long stack names that differ only past the cut do not either.
func VMName(stack, job string, index int) string {
	suffix := "-" + job + "-" + strconv.Itoa(index)
	base := dnsSlug(stack)
	if base == "" {
		return strings.TrimPrefix(suffix, "-")
	}
	if len(base)+len(suffix) > maxDNSLabel {
		sum := sha256.Sum256([]byte(stack))
		tag := "-" + hex.EncodeToString(sum[:])[:vmNameHash]
		base = strings.TrimRight(base[:max(maxDNSLabel-len(suffix)-len(tag), 1)], "-") + tag
	}
	return base + suffix
}

const (
	maxDNSLabel = 63
	vmNameHash  = 6 // hex digits of the stack name's hash kept when the name is cut
)

// dnsSlug lower-cases s and turns every run of characters other than a-z and 0-9 into one
// hyphen, without a hyphen at either end.
func dnsSlug(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	return strings.TrimSuffix(b.String(), "-")
}

// MachineName is the name of the execution's machine: the one reserved at its first deploy,
// else the one it gets in a stack named stack (VMName).
func (e Execution) MachineName(stack string) string {
	if e.VMName != nil {
		return *e.VMName
	}
	return VMName(stack, e.Job, e.Index)
}

// VMTags are the Proxmox tags of a stack's VMs: "horizon", one naming the stack, and the
// stack's labels.
func VMTags(s Stack) []string {
	return append([]string{"horizon", "stack-" + s.ID.String()}, s.Labels...)
}

// Workspace is the Terraform workspace (state) of one execution.
func Workspace(stack uuid.UUID, job string, index int) string {
	return fmt.Sprintf("s%s-%s-%d", stack, job, index)
}
