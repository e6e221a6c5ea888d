package stacks

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/google/uuid"

	"horizon/functions/api"
	"horizon/shared/horizon"
)

// ExecutionRequest is one execution's answers, as a client sends them. An answer left out is
// the default of a new execution and stays as it is on one named by its id; null clears the
// nullable ones (pointers) and is refused on the others.
type ExecutionRequest struct {
	// ID names an existing execution when editing a deployed stack: its answers change.
	// Executions without an id are new; existing ones the request does not name are removed.
	ID              *uuid.UUID                `json:"id"`
	Parameters      api.Field[map[string]any] `json:"parameters"`
	AddressID       api.Field[*uuid.UUID]     `json:"address_id"`
	SSHKeyID        api.Field[*uuid.UUID]     `json:"ssh_key_id"`
	ProxmoxServerID api.Field[*uuid.UUID]     `json:"proxmox_server_id"`
	Node            api.Field[string]         `json:"node"`
	Pool            api.Field[string]         `json:"pool"`
	ISOID           api.Field[*uuid.UUID]     `json:"iso_id"`
	Nagios          api.Field[*NagiosRequest] `json:"nagios"`
	NodeExporter    api.Field[bool]           `json:"node_exporter"`
	StartupOrder    api.Field[*int]           `json:"startup_order"`

	// What GET shows and only Horizon sets, accepted so that an execution read can be sent back
	// as is: each must equal the execution's current value (checkReadOnly). Null, as GET shows
	// an unset one, is the same as leaving it out.
	Index   *int    `json:"index"`
	Commit  *string `json:"commit"`
	VMID    *int    `json:"vm_id"`
	Applied *bool   `json:"applied"`
	State   *string `json:"state"`

	// base is the configuration of the execution the request names by its id (resolveRequests),
	// or of a draft's execution being rebuilt (requestOf): the answers the request leaves out
	// keep its values. Nil for a new execution.
	base *horizon.ExecutionConfig
}

// config is the execution's answers: the request's applied onto its base (none for a new
// execution). Parameters merge by name onto the base's: those sent replace, null resets one to
// its default. Secret parameters are not part of it (see setSecrets).
func (r ExecutionRequest) config() horizon.ExecutionConfig {
	var cfg horizon.ExecutionConfig
	if r.base != nil {
		cfg = *r.base
		params := maps.Clone(cfg.Parameters)
		if params == nil {
			params = map[string]any{}
		}
		for k, v := range r.Parameters.Value() {
			if v == nil {
				delete(params, k)
			} else {
				params[k] = v
			}
		}
		cfg.Parameters = params
	} else {
		cfg.Parameters = r.Parameters.Value()
	}
	cfg.SecretParameterNames = nil
	r.AddressID.Apply(&cfg.AddressID)
	r.SSHKeyID.Apply(&cfg.SSHKeyID)
	r.ProxmoxServerID.Apply(&cfg.ProxmoxServerID)
	r.Node.Apply(&cfg.Node)
	r.Pool.Apply(&cfg.Pool)
	r.ISOID.Apply(&cfg.ISOID)
	r.NodeExporter.Apply(&cfg.NodeExporter)
	r.StartupOrder.Apply(&cfg.StartupOrder)
	if r.Nagios.Given() {
		cfg.NagiosHostgroup = ""
		if n := r.Nagios.Value(); n != nil {
			cfg.NagiosHostgroup = n.Hostgroup
		}
	}
	return cfg
}

// resolveRequests merges every execution request that names an execution of the stack (by
// its id) onto it, and checks the read-only fields of all; an id that is not one of the job's
// executions is a problem.
func resolveRequests(jobs map[string]JobRequest, existing []horizon.Execution, p *horizon.Problems) map[string]JobRequest {
	byID := map[uuid.UUID]horizon.Execution{}
	for _, e := range existing {
		byID[e.ID] = e
	}
	out := make(map[string]JobRequest, len(jobs))
	for name, j := range jobs {
		var reqs []ExecutionRequest
		for i, r := range j.Executions {
			var old *horizon.Execution
			if r.ID != nil {
				e, ok := byID[*r.ID]
				if !ok || e.Job != name {
					p.Add(execField(name, i, "id"), "is not an execution of job %s of this stack", name)
					continue
				}
				old, r.base = &e, &e.Config
			}
			r.checkReadOnly(p, name, i, old)
			reqs = append(reqs, r)
		}
		out[name] = JobRequest{Executions: reqs}
	}
	return out
}

// checkReadOnly refuses a read-only field whose value is not the execution's own (old nil: a new
// execution, which has none of them but its index, its position i).
func (r ExecutionRequest) checkReadOnly(p *horizon.Problems, job string, i int, old *horizon.Execution) {
	field := func(f string) string { return execField(job, i, f) }
	if r.Index != nil && *r.Index != i {
		p.Add(field("index"), "is %d, the execution's position in the list; leave it out or send %d", *r.Index, i)
	}
	if old == nil {
		for name, set := range map[string]bool{"commit": r.Commit != nil, "vm_id": r.VMID != nil, "applied": r.Applied != nil,
			"state": r.State != nil} {
			if set {
				p.Add(field(name), "is set by Horizon: leave it out of a new execution")
			}
		}
		return
	}
	if r.Commit != nil && *r.Commit != old.Commit {
		p.Add(field("commit"), "is set by Horizon (%s): send it unchanged or leave it out", old.Commit)
	}
	if r.VMID != nil && (old.VMID == nil || *r.VMID != *old.VMID) {
		p.Add(field("vm_id"), "is set by Horizon: send it unchanged or leave it out")
	}
	if r.Applied != nil && *r.Applied != (old.AppliedHash != nil) {
		p.Add(field("applied"), "is set by Horizon: send it unchanged or leave it out")
	}
	if r.State != nil && *r.State != string(old.State) {
		p.Add(field("state"), "is set by Horizon (%s): send it unchanged or leave it out", old.State)
	}
}

// NagiosRequest is an execution's monitoring choice.
type NagiosRequest struct {
	Hostgroup string `json:"hostgroup"`
}

// JobRequest is one job's executions.
type JobRequest struct {
	Executions []ExecutionRequest `json:"executions"`
}

// Jobs is a request's executions by job name. A type error (a null among them) names the field
// by its path as sent, app.executions[0].node under the body's jobs; encoding/json, which
// skips map keys and list indices, would call it executions.node.
type Jobs map[string]JobRequest

// UnmarshalJSON decodes strictly, job by job and execution by execution, so that it can say
// where a type error is.
func (j *Jobs) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil || raw == nil {
		*j = nil
		return err
	}
	out := make(Jobs, len(raw))
	// In name order, so that of two bad jobs the same one is named every time.
	for _, name := range slices.Sorted(maps.Keys(raw)) {
		body := raw[name]
		var job struct {
			Executions []json.RawMessage `json:"executions"`
		}
		if err := api.UnmarshalStrict(body, &job); err != nil {
			return at(name, err)
		}
		var reqs []ExecutionRequest
		if job.Executions != nil {
			reqs = make([]ExecutionRequest, len(job.Executions))
		}
		for i, e := range job.Executions {
			if err := api.UnmarshalStrict(e, &reqs[i]); err != nil {
				return at(fmt.Sprintf("%s.executions[%d]", name, i), err)
			}
		}
		out[name] = JobRequest{Executions: reqs}
	}
	*j = out
	return nil
}

// at puts path in front of the field a type error names; other errors name what they name.
func at(path string, err error) error {
	var typ *json.UnmarshalTypeError
	if !errors.As(err, &typ) {
		return err
	}
	named := *typ
	named.Field = path
	if typ.Field != "" {
		named.Field += "." + typ.Field
	}
	return &named
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
	Preselected []string `json:"preselected"`
	// ActionCommits is the commit each terraform action runs at: the one its template version
	// pinned, or a force retry's re-pin.
	ActionCommits  map[string]string `json:"action_commits"`
	AllowedActions []string          `json:"allowed_actions"`
	CurrentRun     *Run              `json:"current_run"`
	// Drift is what the drift checks found on the stack's machines.
	Drift      Drift      `json:"drift"`
	Version    int64      `json:"version"`
	DeployedAt *time.Time `json:"deployed_at"`
	CreatedAt  time.Time  `json:"created_at"`
	UpdatedAt  time.Time  `json:"updated_at"`
	// NotCopied, only in the answer of a duplicate, lists what the copy left out, by field:
	// addresses (one stack's each) and the secrets the template generates.
	NotCopied []horizon.FieldError `json:"not_copied,omitempty"`
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

// Run is a stack's run (api.Run).
type Run = api.Run

func toRun(r horizon.Run, can horizon.Capabilities) Run {
	return api.NewRun(r, horizon.RunActions(r.State, can))
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
