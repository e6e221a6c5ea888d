// Package drift holds the drift tasks: drift:schedule, the periodic pass that enqueues one
// drift:check per Proxmox server, and drift:check, which compares the machines Horizon built
// on one server with what the server shows and records the findings on their stacks
// (shared/drift says how they are compared).
//
// Decisions a newcomer would otherwise rediscover:
//
//   - Cost per check of a server: one GET /cluster/resources?type=vm, one task-log read per
//     node that holds a checked machine (PVE has no cluster-wide task listing), and a config
//     read per machine the sweep reaches — by default every machine, every check. PVE shows a
//     config's digest only in the config itself, and a synchronous config edit (PUT …/config,
//     what the web UI's hardware and options panels do) leaves no task and changes nothing in
//     the listing when it touches a NIC, onboot, boot order, a cloud-init key or a non-boot
//     disk: only reading the config finds it. The sweep reads the configs not read for
//     longest, ceil(machines / Sweep) per check, so every config is read at least once every
//     Sweep checks (HORIZON_DRIFT_SWEEP_INTERVALS, default 1: such an edit is found by the
//     next check). An operator may raise Sweep to read fewer configs per check; machines
//     whose listing row shows memory, CPUs or the boot disk changed, whose node's task log
//     names them (qmconfig, resize, a snapshot rollback, migration…) or that have an open
//     config finding are read every check whatever Sweep is, and first.
//   - A periodic check spreads its config reads over Spread (the worker sets half the drift
//     interval, at most half the check's timeout), node by node, with at most PerNode at a
//     time on each node: 3 000 machines are 1 000 reads per cluster over minutes, not a burst
//     on pveproxy. The findings are recorded when the last read is done. An on-demand check
//     (POST /v1/stacks/{id}/drift-check) is not spread: an operator waits for it.
//   - Nothing is ever written to Proxmox: every call is a GET (shared/drift.API has no other).
//   - A server that does not answer fails the check: the failure is recorded on the server's
//     drift_checks row, and no finding is raised or cleared (no false "missing"). A machine
//     whose node is offline is likewise left as it was.
//   - One check per server at a time: a check claims the server's drift_checks row (a claim
//     older than the task's timeout is taken over: its worker died); a second check finds it
//     claimed and skips — the running one covers the same machines.
//   - Paused stacks: a stack with a run in progress or whose last run failed is not compared
//     (HCP's rule) unless an operator asked for it by POST /v1/stacks/{id}/drift-check, which
//     still waits for a run in progress to end.
//   - Events: stack.drift.found when a stack goes from no unaccepted finding to some,
//     stack.drift.cleared back; published after the transaction that records them.
package drift

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"horizon/shared/auth"
	"horizon/shared/drift"
	"horizon/shared/events"
	"horizon/shared/horizon"
	"horizon/shared/proxmox"
	"horizon/shared/queue"
	"horizon/shared/secrets"
	"horizon/shared/store"
)

// Checker runs drift:check.
type Checker struct {
	DB     *pgxpool.Pool
	Box    *secrets.Box
	Events *events.Publisher
	Log    *slog.Logger
	// Sweep: every machine's config is read at least once every Sweep checks (default 1: every
	// check reads every config).
	Sweep int
	// Spread: a periodic check (no stacks asked for) starts its config reads on each node
	// evenly over Spread (0: as fast as PerNode allows).
	Spread time.Duration
	// PerNode bounds the concurrent config and task-log reads on one node (default 2).
	PerNode int
	// Client returns the API of a server; nil: proxmox.ForServer (the benchmark counts calls).
	Client func(horizon.ProxmoxServer) (drift.API, error)
}

// Result is what one check of one server did.
type Result struct {
	// Skipped: another check of the server was running.
	Skipped bool
	// Failed is why the server could not be checked (recorded, nothing concluded).
	Failed error
	// Machines compared, listing calls, task-log calls and config reads made, findings open.
	Machines, Listings, TaskReads, ConfigReads, Findings int
}

// ProcessTask implements asynq.Handler for drift:check.
func (c *Checker) ProcessTask(ctx context.Context, t *asynq.Task) error {
	var p queue.DriftCheck
	if err := json.Unmarshal(t.Payload(), &p); err != nil {
		return fmt.Errorf("decode %s: %v: %w", t.Type(), err, asynq.SkipRetry)
	}
	res, err := c.Check(ctx, p.ServerID, p.Stacks)
	if err != nil {
		return err
	}
	if res.Failed != nil {
		c.Log.WarnContext(ctx, "drift check failed", "server_id", p.ServerID, "error", res.Failed)
	}
	return nil
}

// Check compares the machines of server with Proxmox and records the findings. also are stacks
// to compare even though their last run failed. An error is Horizon's own (Postgres); a
// server that cannot be read is Result.Failed.
func (c *Checker) Check(ctx context.Context, server uuid.UUID, also []uuid.UUID) (Result, error) {
	var res Result
	claim := uuid.New()
	started := time.Now()
	ok, since, err := store.DriftCheckClaim(ctx, c.DB, server, claim, queue.DriftCheckTimeout)
	if err != nil || !ok {
		res.Skipped = !ok
		return res, err
	}
	failure, err := c.check(ctx, server, also, since, &res)
	// The claim is released whatever happened, even when ctx is done.
	finishCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if ferr := store.DriftCheckFinish(finishCtx, c.DB, server, claim, started, errors.Join(failure, err)); ferr != nil && err == nil {
		err = ferr
	}
	res.Failed = failure
	return res, err
}

// outcome is what the check concluded about one machine.
type outcome struct {
	rec      drift.Record
	scope    store.DriftScope
	findings []drift.Finding
	digest   string // of the config read, "" when not read
}

func (c *Checker) check(ctx context.Context, server uuid.UUID, also []uuid.UUID, since *time.Time, res *Result) (error, error) {
	recs, err := store.VMRecordsToCheck(ctx, c.DB, server, also)
	if err != nil || len(recs) == 0 {
		return nil, err
	}
	res.Machines = len(recs)
	srv, err := store.ProxmoxServerGet(ctx, c.DB, server)
	if err != nil {
		return nil, err
	}
	api, err := c.client(srv)
	if err != nil {
		return err, nil
	}
	res.Listings++
	vms, err := drift.ListVMs(ctx, api)
	if err != nil {
		return err, nil
	}
	rows := map[int]*drift.Resource{}
	for i := range vms {
		rows[vms[i].VMID] = &vms[i]
	}

	// The task log of every node that holds (or held) a checked machine, from the last
	// successful check on (a minute of slack for clocks), or from the oldest record.
	from := time.Now()
	for _, r := range recs {
		from = minTime(from, r.RecordedAt)
	}
	if since != nil {
		from = since.Add(-time.Minute)
	}
	nodes := map[string]bool{}
	for _, r := range recs {
		nodes[r.Node] = true
		if row := rows[r.VMID]; row != nil && row.Status != "unknown" {
			nodes[row.Node] = true
		}
	}
	tasks, tasksFailed := c.readTasks(ctx, api, nodes, from, res)

	ids := make([]uuid.UUID, len(recs))
	for i, r := range recs {
		ids[i] = r.ExecutionID
	}
	open, err := store.DriftExecutionsWithConfigFindings(ctx, c.DB, ids)
	if err != nil {
		return nil, err
	}
	sweep, err := store.VMRecordsSweep(ctx, c.DB, ids, (len(recs)+c.sweep()-1)/c.sweep())
	if err != nil {
		return nil, err
	}
	urgent := map[uuid.UUID]bool{}
	for _, id := range open {
		urgent[id] = true
	}
	swept := map[uuid.UUID]int{}
	for i, id := range sweep {
		swept[id] = i
	}

	outcomes := make([]*outcome, 0, len(recs))
	// A machine with a sign of change is read first; then the sweep's, oldest read first.
	var reads []*outcome
	sweepReads := make([]*outcome, len(sweep))
	for _, rec := range recs {
		row := rows[rec.VMID]
		l := drift.CompareListing(rec, row)
		if l.Unknown {
			continue // its node does not answer: nothing may be concluded
		}
		o := &outcome{rec: rec, scope: store.DriftScopeListing, findings: l.Findings}
		outcomes = append(outcomes, o)
		if row == nil {
			o.scope = store.DriftScopeAll // gone: no config finding can stand
			continue
		}
		if l.ReadConfig || urgent[rec.ExecutionID] || tasksFailed[row.Node] ||
			drift.Mentions(tasks[row.Node], rec) || drift.Mentions(tasks[rec.Node], rec) {
			reads = append(reads, o)
		} else if i, ok := swept[rec.ExecutionID]; ok {
			sweepReads[i] = o
		}
	}
	for _, o := range sweepReads {
		if o != nil {
			reads = append(reads, o)
		}
	}
	var spread time.Duration
	if len(also) == 0 {
		spread = c.Spread
	}
	c.readConfigs(ctx, api, rows, reads, spread, res)
	for _, o := range outcomes {
		row := rows[o.rec.VMID]
		var nodeTasks []drift.Task
		if row != nil {
			nodeTasks = append(nodeTasks, tasks[row.Node]...)
		}
		if row == nil || row.Node != o.rec.Node {
			nodeTasks = append(nodeTasks, tasks[o.rec.Node]...)
		}
		drift.Attribute(o.rec, o.findings, nodeTasks)
	}
	return nil, c.record(ctx, outcomes, res)
}

// readTasks reads the task logs of nodes, PerNode… in parallel, one call per node. A node whose
// log cannot be read is reported, so that its machines' configs are read instead.
func (c *Checker) readTasks(ctx context.Context, api drift.API, nodes map[string]bool, from time.Time, res *Result) (map[string][]drift.Task, map[string]bool) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	tasks, failed := map[string][]drift.Task{}, map[string]bool{}
	sem := make(chan struct{}, 4)
	for node := range nodes {
		res.TaskReads++
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			ts, err := drift.ReadTasks(ctx, api, node, from)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed[node] = true
				return
			}
			tasks[node] = ts
		}()
	}
	wg.Wait()
	return tasks, failed
}

// readConfigs reads the configs of outs and compares them: on each node in the order of outs, at
// most PerNode at a time, the i-th of a node's k reads starting no earlier than i/k of spread
// after the first. A machine whose config cannot be read keeps the listing's scope: its config
// findings stay.
func (c *Checker) readConfigs(ctx context.Context, api drift.API, rows map[int]*drift.Resource, outs []*outcome, spread time.Duration, res *Result) {
	byNode := map[string][]*outcome{}
	for _, o := range outs {
		node := rows[o.rec.VMID].Node
		byNode[node] = append(byNode[node], o)
	}
	res.ConfigReads += len(outs)
	start := time.Now()
	var wg sync.WaitGroup
	for node, list := range byNode {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem := make(chan struct{}, c.perNode())
			var reads sync.WaitGroup
			defer reads.Wait()
			for i, o := range list {
				if spread > 0 && !sleepUntil(ctx, start.Add(spread*time.Duration(i)/time.Duration(len(list)))) {
					return // the check's time is up: the rest keep their config findings
				}
				sem <- struct{}{}
				reads.Add(1)
				go func() {
					defer reads.Done()
					defer func() { <-sem }()
					raw, err := drift.ReadConfig(ctx, api, node, o.rec.VMID)
					if err != nil {
						return
					}
					o.scope = store.DriftScopeAll
					o.digest, _ = raw["digest"].(string)
					o.findings = append(o.findings, drift.CompareConfig(o.rec, raw)...)
				}()
			}
		}()
	}
	wg.Wait()
}

// sleepUntil waits until t; false when ctx ends first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// record writes the outcomes stack by stack, each in its own transaction, then announces the
// stacks whose drift started or ended.
func (c *Checker) record(ctx context.Context, outcomes []*outcome, res *Result) error {
	byStack := map[uuid.UUID][]store.DriftOutcome{}
	digests := map[uuid.UUID]string{}
	for _, o := range outcomes {
		byStack[o.rec.StackID] = append(byStack[o.rec.StackID], store.DriftOutcome{ExecutionID: o.rec.ExecutionID, Scope: o.scope, Findings: o.findings})
		res.Findings += len(o.findings)
		if o.digest != "" {
			digests[o.rec.ExecutionID] = o.digest
		}
	}
	if err := store.VMRecordsConfigRead(ctx, c.DB, digests); err != nil {
		return err
	}
	// A healthy estate costs two queries, not a transaction per stack: stacks without a finding
	// before or now are only marked checked.
	var candidates []uuid.UUID
	for stack, outs := range byStack {
		if !anyFinding(outs) {
			candidates = append(candidates, stack)
		}
	}
	quiet, err := store.DriftQuiet(ctx, c.DB, candidates)
	if err != nil {
		return err
	}
	if err := store.DriftMarkChecked(ctx, c.DB, quiet); err != nil {
		return err
	}
	for _, stack := range quiet {
		delete(byStack, stack)
	}
	for stack, outs := range byStack {
		var before, after bool
		var team uuid.UUID
		err := store.WithTx(ctx, c.DB, func(ctx context.Context, tx pgx.Tx) error {
			var err error
			if before, after, err = store.DriftRecord(ctx, tx, stack, outs); err != nil {
				return err
			}
			s, err := store.StackGet(ctx, tx, auth.Scope{All: true}, stack)
			team = s.TeamID
			return err
		})
		if err != nil {
			return err
		}
		if before != after && c.Events != nil {
			state := events.DriftClearedState
			if after {
				state = events.DriftFoundState
			}
			// The findings are recorded: a lost event only delays a notification.
			if _, err := c.Events.Publish(ctx, events.Event{Type: events.Drift, ID: stack, StackID: stack, TeamID: team, State: state}); err != nil {
				c.Log.WarnContext(ctx, "publish drift event", "stack_id", stack, "error", err)
			}
		}
	}
	return nil
}

func anyFinding(outs []store.DriftOutcome) bool {
	for _, o := range outs {
		if len(o.Findings) > 0 {
			return true
		}
	}
	return false
}

func (c *Checker) client(srv horizon.ProxmoxServer) (drift.API, error) {
	if c.Client != nil {
		return c.Client(srv)
	}
	return proxmox.ForServer(c.Box, srv, 30*time.Second)
}

func (c *Checker) sweep() int {
	if c.Sweep > 0 {
		return c.Sweep
	}
	return 1
}

func (c *Checker) perNode() int {
	if c.PerNode > 0 {
		return c.PerNode
	}
	return 2
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// Scheduler runs drift:schedule: it enqueues a check of every server with machines to compare.
type Scheduler struct {
	DB      *pgxpool.Pool
	Queues  queue.Queues
	Enqueue queue.Enqueuer
	// Period is the drift interval: one check per server and period.
	Period time.Duration
}

// ProcessTask implements asynq.Handler for drift:schedule.
func (s Scheduler) ProcessTask(ctx context.Context, _ *asynq.Task) error {
	servers, err := store.DriftServers(ctx, s.DB)
	if err != nil {
		return err
	}
	now := time.Now()
	for _, id := range servers {
		if err := s.Enqueue.Enqueue(ctx, queue.NewDriftCheck(s.Queues, queue.DriftCheck{ServerID: id}, s.Period, now)); err != nil {
			return err
		}
	}
	return nil
}
