// Package answers computes what an execution is applied with — its effective parameters (the
// user's answers over the template's defaults, secrets included) and its inputs (other jobs'
// outputs) — and the hash that tells whether anything changed since the last apply.
//
// An input that references a job with several executions receives the list of their values,
// in execution order; with one execution, the value itself.
package answers

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"

	"horizon/shared/horizon"
	"horizon/shared/template"
)

// Effective is what one execution is applied with.
type Effective struct {
	// Parameters are every parameter's value: the user's answer, else a generated or stored
	// secret, else the template's default. Parameters without any value are absent.
	Parameters map[string]any
	// Secrets are the values that must never be shown (secret parameters), for masking.
	Secrets []string
	// Inputs are the module variables fed from other jobs' outputs.
	Inputs map[string]any
}

// Outputs returns the outputs of every active execution of a job, in execution order, secret
// ones included (opened).
type Outputs func(job string) []map[string]any

// Resolve computes an execution's effective answers from its job, its non-secret answers,
// its secret parameters (opened) and the outputs of the jobs its inputs reference.
func Resolve(job *template.Job, params map[string]any, secretParams map[string]string, outputs Outputs) (Effective, error) {
	ef := Effective{Parameters: map[string]any{}, Inputs: map[string]any{}}
	for _, p := range job.Parameters {
		switch {
		case p.Secret && secretParams[p.Name] != "":
			ef.Parameters[p.Name] = secretParams[p.Name]
			ef.Secrets = append(ef.Secrets, secretParams[p.Name])
		case params[p.Name] != nil:
			ef.Parameters[p.Name] = params[p.Name]
		case p.Default != nil:
			ef.Parameters[p.Name] = p.Default
		}
	}
	names := make([]string, 0, len(job.Inputs))
	for name := range job.Inputs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		ref, err := template.ParseReference(job.Inputs[name])
		if err != nil {
			return ef, fmt.Errorf("input %s: %w", name, err)
		}
		var values []any
		for _, out := range outputs(ref.Job) {
			v, ok := out[ref.Output]
			if !ok {
				return ef, fmt.Errorf("input %s: job %s has no output %s (has it run?)", name, ref.Job, ref.Output)
			}
			values = append(values, v)
		}
		switch len(values) {
		case 0:
			return ef, fmt.Errorf("input %s: job %s has no execution to take %s from", name, ref.Job, ref.Output)
		case 1:
			ef.Inputs[name] = values[0]
		default:
			ef.Inputs[name] = values
		}
	}
	return ef, nil
}

// Hash identifies what an apply applies: the pinned commit, the effective parameters and
// inputs, and the attachments (extra: node, address, key, tags …). Two applies with the same
// hash would do the same. Secrets are part of it (a changed password re-applies) but only
// through the hash.
func (ef Effective) Hash(commit string, extra map[string]any) string {
	b, _ := json.Marshal(struct { // maps marshal with sorted keys: the encoding is canonical
		Commit     string         `json:"commit"`
		Parameters map[string]any `json:"parameters"`
		Inputs     map[string]any `json:"inputs"`
		Extra      map[string]any `json:"extra"`
	}{commit, ef.Parameters, ef.Inputs, extra})
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Attachments are what, besides parameters and inputs, an apply of an execution applies, as
// they enter its hash. Labels (Proxmox tags) are not among them: they are written to the VMs
// through the Proxmox API, without a Terraform run.
func Attachments(cfg horizon.ExecutionConfig) map[string]any {
	return map[string]any{"server": cfg.ProxmoxServerID, "node": cfg.Node, "pool": cfg.Pool, "address": cfg.AddressID,
		"ssh_key": cfg.SSHKeyID, "iso": cfg.ISOID, "node_exporter": cfg.NodeExporter, "startup_order": cfg.StartupOrder,
		"nagios_hostgroup": cfg.NagiosHostgroup}
}
