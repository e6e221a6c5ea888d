package stacks

import (
	"time"

	"github.com/google/uuid"

	"horizon/shared/horizon"
)

// ExecutionRequest is one execution's answers, as a client sends them.
type ExecutionRequest struct {
	// ID names an existing execution when editing a deployed stack: its answers change.
	// Executions without an id are new; existing ones the request does not name are removed.
	ID              *uuid.UUID     `json:"id"`
	Parameters      map[string]any `json:"parameters"`
	AddressID       *uuid.UUID     `json:"address_id"`
	SSHKeyID        *uuid.UUID     `json:"ssh_key_id"`
	ProxmoxServerID *uuid.UUID     `json:"proxmox_server_id"`
	Node            string         `json:"node"`
	Pool            string         `json:"pool"`
	ISOID           *uuid.UUID     `json:"iso_id"`
	Nagios          *NagiosRequest `json:"nagios"`
	NodeExporter    bool           `json:"node_exporter"`
	StartupOrder    *int           `json:"startup_order"`
}

// NagiosRequest is an execution's monitoring choice.
type NagiosRequest struct {
	Hostgroup string `json:"hostgroup"`
}

// JobRequest is one job's executions.
type JobRequest struct {
	Executions []ExecutionRequest `json:"executions"`
}

// Stack is a stack as the API shows it.
type Stack struct {
	ID              uuid.UUID      `json:"id"`
	TeamID          uuid.UUID      `json:"team_id"`
	Name            string         `json:"name"`
	Description     string         `json:"description"`
	Labels          []string       `json:"labels"`
	EnvironmentID   uuid.UUID      `json:"environment_id"`
	TemplateID      uuid.UUID      `json:"template_id"`
	TemplateVersion int            `json:"template_version"`
	State           string         `json:"state"`
	Jobs            map[string]Job `json:"jobs"`
	// Problems are what keeps a draft from deploying (checked without asking Proxmox).
	Problems []horizon.FieldError `json:"problems"`
	// Preselected lists the answers Horizon filled because only one option existed.
	Preselected    []string   `json:"preselected"`
	AllowedActions []string   `json:"allowed_actions"`
	CurrentRun     *Run       `json:"current_run"`
	Version        int64      `json:"version"`
	DeployedAt     *time.Time `json:"deployed_at"`
	CreatedAt      time.Time  `json:"created_at"`
	UpdatedAt      time.Time  `json:"updated_at"`
}

// Job is one job of a stack.
type Job struct {
	Executions []Execution `json:"executions"`
}

// Execution is one execution as the API shows it: its answers, with secret parameters as
// {"secret": true}, and where its machine lives.
type Execution struct {
	ID              uuid.UUID      `json:"id"`
	Index           int            `json:"index"`
	Parameters      map[string]any `json:"parameters"`
	AddressID       *uuid.UUID     `json:"address_id"`
	SSHKeyID        *uuid.UUID     `json:"ssh_key_id"`
	ProxmoxServerID *uuid.UUID     `json:"proxmox_server_id"`
	Node            string         `json:"node"`
	Pool            string         `json:"pool"`
	ISOID           *uuid.UUID     `json:"iso_id"`
	Nagios          *NagiosRequest `json:"nagios"`
	NodeExporter    bool           `json:"node_exporter"`
	StartupOrder    *int           `json:"startup_order"`
	Commit          string         `json:"commit"`
	VMID            *int           `json:"vm_id"`
	Applied         bool           `json:"applied"`
	State           string         `json:"state"`
}

// Run is a run as the API shows it.
type Run struct {
	ID             uuid.UUID  `json:"id"`
	StackID        *uuid.UUID `json:"stack_id"`
	Kind           string     `json:"kind"`
	State          string     `json:"state"`
	ActorID        *uuid.UUID `json:"actor_id"`
	Error          *string    `json:"error"`
	AllowedActions []string   `json:"allowed_actions"`
	CreatedAt      time.Time  `json:"created_at"`
	StartedAt      *time.Time `json:"started_at"`
	FinishedAt     *time.Time `json:"finished_at"`
}

func toRun(r horizon.Run, can horizon.Capabilities) Run {
	return Run{ID: r.ID, StackID: r.StackID, Kind: string(r.Kind), State: string(r.State), ActorID: r.ActorID, Error: r.Error,
		AllowedActions: horizon.RunActions(r.State, can), CreatedAt: r.CreatedAt, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt}
}

func toExecution(e horizon.Execution) Execution {
	params := map[string]any{}
	for k, v := range e.Config.Parameters {
		params[k] = v
	}
	for _, name := range e.Config.SecretParameterNames {
		params[name] = map[string]any{"secret": true}
	}
	var nagios *NagiosRequest
	if e.Config.NagiosHostgroup != "" {
		nagios = &NagiosRequest{Hostgroup: e.Config.NagiosHostgroup}
	}
	return Execution{ID: e.ID, Index: e.Index, Parameters: params, AddressID: e.Config.AddressID, SSHKeyID: e.Config.SSHKeyID,
		ProxmoxServerID: e.Config.ProxmoxServerID, Node: e.Config.Node, Pool: e.Config.Pool, ISOID: e.Config.ISOID, Nagios: nagios,
		NodeExporter: e.Config.NodeExporter, StartupOrder: e.Config.StartupOrder, Commit: e.Commit, VMID: e.VMID,
		Applied: e.AppliedHash != nil, State: string(e.State)}
}
