package store

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"horizon/shared/auth"
)

// NodeExporterMachine is one built machine that runs Prometheus Node Exporter, with what the
// Prometheus targets label it with.
type NodeExporterMachine struct {
	IP            string // its address, as Horizon assigned it
	StackID       uuid.UUID
	Stack         string
	Team          string
	Environment   string
	Job           string
	Index         int
	Node          string
	ProxmoxServer string
	VMName        string // "" for machines built before names were reserved
	Labels        []string
}

// NodeExporterFilter narrows NodeExporterMachines; zero fields do not filter.
type NodeExporterFilter struct {
	TeamID        *uuid.UUID
	EnvironmentID *uuid.UUID
	StackID       *uuid.UUID
	// Labels the stack must all carry.
	Labels []string
}

// NodeExporterMachines returns, in one statement, every machine of the stacks the scope may
// see that chose Node Exporter and is built: its execution is active (not being or already
// destroyed), its first apply succeeded, and its stack is deploying, deployed, updating (a
// re-apply) or failed — a failed stack keeps the machines it built. Drafts, and stacks being or
// already removed, have none. The answer is the whole list, ordered by stack name, job and
// execution, so that the caller can serve it whole or fail whole.
func NodeExporterMachines(ctx context.Context, q Querier, scope auth.Scope, f NodeExporterFilter) ([]NodeExporterMachine, error) {
	if f.Labels == nil {
		f.Labels = []string{}
	}
	rows, err := q.Query(ctx, `SELECT host(a.ip), s.id, s.name, t.name, env.name, e.job, e.index, coalesce(e.node, ''),
		coalesce(ps.name, ''), coalesce(e.vm_name, ''), s.labels
		FROM executions e
		JOIN stacks s ON s.id = e.stack_id
		JOIN teams t ON t.id = s.team_id
		JOIN environments env ON env.id = s.environment_id
		JOIN address_attachments aa ON aa.execution_id = e.id
		JOIN addresses a ON a.id = aa.address_id
		LEFT JOIN proxmox_servers ps ON ps.id = e.server_id
		WHERE e.state = 'active' AND e.applied_hash IS NOT NULL AND e.config @> '{"node_exporter": true}'
		  AND s.state IN ('deploying', 'deployed', 'updating', 'failed')
		  AND ($1 OR s.team_id = ANY($2))
		  AND ($3::uuid IS NULL OR s.team_id = $3)
		  AND ($4::uuid IS NULL OR s.environment_id = $4)
		  AND ($5::uuid IS NULL OR s.id = $5)
		  AND s.labels @> $6
		ORDER BY s.name, s.id, e.job, e.index`,
		scope.All, scope.TeamIDs(), f.TeamID, f.EnvironmentID, f.StackID, f.Labels)
	if err != nil {
		return nil, translate(err)
	}
	ms, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (NodeExporterMachine, error) {
		var m NodeExporterMachine
		err := r.Scan(&m.IP, &m.StackID, &m.Stack, &m.Team, &m.Environment, &m.Job, &m.Index, &m.Node,
			&m.ProxmoxServer, &m.VMName, &m.Labels)
		return m, err
	})
	return ms, translate(err)
}
