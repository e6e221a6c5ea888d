// Package estate builds a drift estate on sandbox clusters: stacks of deployed machines,
// created in the sandbox and recorded as an apply records them (shared/drift.CaptureRecord),
// with the clusters registered as Proxmox servers. The drift tests (workers/drift) and the
// drift benchmark (deploy/bench drift) build theirs with it, so both check the same estate.
// It is not a test helper (the benchmark, a program, imports it) and writes only to the
// database and sandbox it is given.
package estate

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"horizon/deploy/sandbox/pve"
	"horizon/shared/drift"
	"horizon/shared/horizon"
	"horizon/shared/proxmox"
	"horizon/shared/secrets"
	"horizon/shared/store"
)

// Options shape an estate.
type Options struct {
	// Stacks deployed, each of PerStack machines (default 1).
	Stacks, PerStack int
	// IPConfig, when set, is machine i's ipconfig0 (started VMs serve SSH on their address).
	IPConfig func(i int) string
	// Parallel machines created at once (default 1).
	Parallel int
}

// Machine is one VM of the estate. Machine i is on cluster i % len(clusters), VM id
// 100 + i / len(clusters), node pve1…pve3 in turn per cluster, named vm-i.
type Machine struct {
	Stack, Execution uuid.UUID
	Cluster          int
	VMID             int
	Node, Name       string
}

// Estate is what Build made.
type Estate struct {
	// Servers are the clusters' proxmox_servers ids and APIs their clients, by cluster.
	Servers []uuid.UUID
	APIs    []*proxmox.Client
	// Stacks in creation order; Machines in the order above.
	Stacks   []uuid.UUID
	Machines []Machine
}

// Build registers clusters as Proxmox servers (their token secrets sealed by box) and makes the
// estate: one team, environment and template, o.Stacks deployed stacks, their machines created
// and started in the sandbox and recorded.
func Build(ctx context.Context, db *pgxpool.Pool, box *secrets.Box, clusters []*pve.Cluster, o Options) (*Estate, error) {
	if o.PerStack <= 0 {
		o.PerStack = 1
	}
	if o.Parallel <= 0 {
		o.Parallel = 1
	}
	e := &Estate{}
	var team, env uuid.UUID
	if err := db.QueryRow(ctx, `INSERT INTO teams (name) VALUES ('ops') RETURNING id`).Scan(&team); err != nil {
		return nil, err
	}
	if err := db.QueryRow(ctx, `INSERT INTO environments (name) VALUES ('lab') RETURNING id`).Scan(&env); err != nil {
		return nil, err
	}
	tmpl, _, err := store.TemplateCreate(ctx, db, horizon.Template{Name: "vm", Active: true},
		horizon.TemplateVersion{Definition: []byte(`{"name":"vm","phases":[]}`), DefinitionHash: "drift", JobCommits: map[string]string{}, Modules: []byte(`{}`)})
	if err != nil {
		return nil, err
	}
	for i, c := range clusters {
		var id uuid.UUID
		err := db.QueryRow(ctx, `INSERT INTO proxmox_servers (name, api_url, token_id, token_secret, tls_fingerprint, ssh_user, ssh_private_key, ssh_public_key)
			VALUES ($1, $2, $3, $4, $5, 'root', '\x00', '') RETURNING id`, fmt.Sprintf("%s-%d", c.Name(), i), c.URL(), c.TokenID(),
			box.SealString(horizon.PurposeProxmoxTokenSecret, c.TokenSecret()), c.CertFingerprint()).Scan(&id)
		if err != nil {
			return nil, err
		}
		api, err := proxmox.New(proxmox.Config{URL: c.URL(), TokenID: c.TokenID(), TokenSecret: secrets.Value(c.TokenSecret()), Fingerprint: c.CertFingerprint()})
		if err != nil {
			return nil, err
		}
		e.Servers, e.APIs = append(e.Servers, id), append(e.APIs, api)
	}
	rows, err := db.Query(ctx, `INSERT INTO stacks (team_id, name, environment_id, template_id, template_version, state, deployed_at)
		SELECT $1, 'stack-' || i, $2, $3, 1, 'deployed', now() FROM generate_series(0, $4 - 1) i ORDER BY i RETURNING id`, team, env, tmpl.ID, o.Stacks)
	if err != nil {
		return nil, err
	}
	if e.Stacks, err = pgx.CollectRows(rows, pgx.RowTo[uuid.UUID]); err != nil {
		return nil, err
	}
	rows, err = db.Query(ctx, `INSERT INTO executions (stack_id, job, index, commit)
		SELECT s.id, 'vm', k, 'c' FROM unnest($1::uuid[]) WITH ORDINALITY s(id, n), generate_series(0, $2 - 1) k ORDER BY s.n, k RETURNING id`, e.Stacks, o.PerStack)
	if err != nil {
		return nil, err
	}
	execs, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, err
	}
	n := len(clusters)
	for i, ex := range execs {
		e.Machines = append(e.Machines, Machine{Stack: e.Stacks[i/o.PerStack], Execution: ex, Cluster: i % n,
			VMID: 100 + i/n, Node: fmt.Sprintf("pve%d", 1+(i/n)%3), Name: fmt.Sprintf("vm-%d", i)})
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	sem := make(chan struct{}, o.Parallel)
	for i, m := range e.Machines {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := e.create(ctx, db, i, m, o); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return nil, first
	}
	return e, nil
}

// create makes machine i in its cluster, started, and records it.
func (e *Estate) create(ctx context.Context, db *pgxpool.Pool, i int, m Machine, o Options) error {
	api := e.APIs[m.Cluster]
	body := map[string]any{"vmid": m.VMID, "name": m.Name, "memory": 512, "cores": 1, "net0": "virtio,bridge=vmbr0",
		"tags": "horizon", "scsi0": "local-lvm:1", "onboot": 1, "start": 1, "pool": "dev"}
	if o.IPConfig != nil {
		body["ipconfig0"] = o.IPConfig(i)
	}
	var upid string
	if err := api.Post(ctx, "/nodes/"+m.Node+"/qemu", body, &upid); err != nil {
		return fmt.Errorf("create VM %d: %w", m.VMID, err)
	}
	if err := api.WaitTask(ctx, upid, 5*time.Millisecond); err != nil {
		return fmt.Errorf("create VM %d: %w", m.VMID, err)
	}
	rec, err := drift.CaptureRecord(ctx, api, drift.Record{ExecutionID: m.Execution, StackID: m.Stack, ServerID: e.Servers[m.Cluster],
		VMID: m.VMID, Node: m.Node, Name: m.Name, Tags: []string{"horizon"}, Pool: "dev", Status: "running"})
	if err != nil {
		return err
	}
	return store.VMRecordPut(ctx, db, rec, nil)
}
