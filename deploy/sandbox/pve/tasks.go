package pve

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// task is one PVE worker task. Its work runs after the configured task duration (and after
// any hang knob for its type is released), under the cluster lock.
type task struct {
	upid    string
	node    string
	typ     string
	id      string
	user    string
	pid     int
	pstart  int
	start   time.Time
	end     time.Time
	running bool
	exit    string // "OK" or the error text, once stopped
	log     []string
	// stop interrupts the task (DELETE …/tasks/{upid}); abort, when set, undoes what its
	// prepare left behind (a downloaded temporary file).
	stop  context.CancelFunc
	abort func()
}

// errInterrupted is the exit status of a task stopped through the API, as PVE reports it.
var errInterrupted = errors.New("interrupted by signal")

// taskWork does a task's change. It runs with c.mu held and may append log lines; an error
// fails the task with its text as the exit status.
type taskWork func(t *task) error

// upid formats PVE's task ID: UPID:node:pid:pstart:starttime:type:id:user: — eight
// colon-separated fields ending with a colon (go-proxmox indexes the eighth).
func formatUPID(node string, pid, pstart int, start time.Time, typ, id, user string) string {
	// A colon inside a field would shift every later one; none of ours should hold one.
	id = strings.ReplaceAll(id, ":", "_")
	return fmt.Sprintf("UPID:%s:%08X:%08X:%08X:%s:%s:%s:", node, pid, pstart, start.Unix(), typ, id, user)
}

// taskPrepare is a task's slow part (a download): it runs before the task's delay, without
// the cluster lock, and logs through logf, which takes the lock.
type taskPrepare func(ctx context.Context, logf func(format string, args ...any)) error

// startTask registers a task and runs it in the background; it returns the UPID. The caller
// holds c.mu. prepare, when not nil, runs first; its error fails the task.
func (c *Cluster) startTask(node, typ, id, user string, prepare taskPrepare, work taskWork) string {
	return c.startAbortableTask(node, typ, id, user, prepare, work, nil)
}

// startAbortableTask is startTask for a task whose prepare leaves something behind that work
// would have taken over: abort undoes it when the task is stopped before work runs.
func (c *Cluster) startAbortableTask(node, typ, id, user string, prepare taskPrepare, work taskWork, abort func()) string {
	c.nextPID++
	now := time.Now()
	t := &task{
		node:    node,
		typ:     typ,
		id:      id,
		user:    user,
		pid:     c.nextPID,
		pstart:  c.nextPID*7 + 100000,
		start:   now,
		running: true,
	}
	t.upid = formatUPID(node, t.pid, t.pstart, now, typ, id, user)
	t.abort = abort
	c.tasks = append(c.tasks, t)
	// Close cancels the context before it takes c.mu (held here) and waits for the tasks
	// after, so checking under the lock keeps a late call from starting a task Close would
	// not wait for.
	if c.sb.ctx.Err() != nil {
		return t.upid
	}
	ctx, stop := context.WithCancel(c.sb.ctx)
	t.stop = stop
	c.sb.wg.Add(1)
	go c.runTask(ctx, t, prepare, work)
	return t.upid
}

// runTask runs a task under ctx, which ends when the sandbox closes or the task is stopped.
func (c *Cluster) runTask(ctx context.Context, t *task, prepare taskPrepare, work taskWork) {
	defer c.sb.wg.Done()
	defer t.stop()
	var err error
	if prepare != nil {
		err = prepare(ctx, func(format string, args ...any) {
			c.mu.Lock()
			defer c.mu.Unlock()
			t.logf(format, args...)
		})
	}
	if sleepCtx(ctx, c.sb.cfg.TaskDuration) {
	wait:
		for gate := c.sb.knobs.hangGate(t.typ); gate != nil; gate = c.sb.knobs.hangGate(t.typ) {
			select {
			case <-gate:
			case <-ctx.Done():
				break wait
			}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sb.ctx.Err() != nil {
		return // the sandbox is closing: the task never finishes, as on a host that lost power
	}
	switch {
	case ctx.Err() != nil:
		// Stopped through the API: the worker is killed before it changes anything.
		err = errInterrupted
		if t.abort != nil {
			t.abort()
		}
	case err == nil:
		err = work(t)
	}
	t.running = false
	t.end = time.Now()
	if err != nil {
		t.exit = err.Error()
		t.log = append(t.log, "TASK ERROR: "+t.exit)
		c.sb.log.Info("sandbox: task failed", "upid", t.upid, "error", t.exit)
	} else {
		t.exit = "OK"
		t.log = append(t.log, "TASK OK")
	}
	c.saveLocked()
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func (t *task) logf(format string, args ...any) {
	t.log = append(t.log, fmt.Sprintf(format, args...))
}

func (t *task) snapshot() Task {
	status := "stopped"
	if t.running {
		status = "running"
	}
	return Task{UPID: t.upid, Node: t.node, Type: t.typ, ID: t.id, User: t.user, Status: status, ExitStatus: t.exit, Log: slices.Clone(t.log)}
}

func (c *Cluster) findTask(node, upid string) *task {
	for _, t := range c.tasks {
		if t.upid == upid && t.node == node {
			return t
		}
	}
	return nil
}

func (c *Cluster) taskRoutes() []route {
	return []route{
		{method: "GET", pattern: "/nodes/{node}/tasks", handle: c.listTasks,
			params: []string{"errors", "limit", "since", "source", "start", "statusfilter", "typefilter", "until", "userfilter", "vmid"}},
		{method: "GET", pattern: "/nodes/{node}/tasks/{upid}/status", handle: c.taskStatus},
		{method: "GET", pattern: "/nodes/{node}/tasks/{upid}/log", handle: c.taskLog, params: []string{"download", "limit", "start"}},
		{method: "DELETE", pattern: "/nodes/{node}/tasks/{upid}", handle: c.stopTask},
	}
}

// stopTask is DELETE …/tasks/{upid}: a running task is interrupted (it ends with "interrupted
// by signal" and changes nothing); stopping a finished task does nothing, as in PVE.
func (c *Cluster) stopTask(k *call) (any, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.findTask(k.vars["node"], k.vars["upid"])
	if t == nil {
		return nil, paramErr("upid", "no such task")
	}
	if err := k.mayTask(t, "Sys.Modify"); err != nil {
		return nil, err
	}
	if t.running && t.stop != nil {
		t.stop()
	}
	return nil, nil
}

func (c *Cluster) listTasks(k *call) (any, error) {
	p := k.p
	start := p.int("start", 0, 0)
	limit := p.int("limit", 50, 0)
	vmid := p.str("vmid")
	typeFilter := p.str("typefilter")
	userFilter := p.str("userfilter")
	statusFilter := p.str("statusfilter") // ok, error, warning, unknown (comma list)
	onlyErrors := p.bool("errors", false)
	source := p.enum("source", "archive", "active", "all")
	since := p.int("since", 0, 0)
	until := p.int("until", 0, 0)
	if err := p.err(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	out := []map[string]any{}
	for i := len(c.tasks) - 1; i >= 0; i-- {
		t := c.tasks[i]
		switch {
		case t.node != k.vars["node"],
			t.user != k.user && !k.may("/nodes/"+t.node, "Sys.Audit"),
			vmid != "" && t.id != vmid,
			typeFilter != "" && t.typ != typeFilter,
			userFilter != "" && !strings.Contains(t.user, userFilter),
			since > 0 && t.start.Unix() < int64(since),
			until > 0 && t.start.Unix() > int64(until),
			source == "active" && !t.running,
			(source == "" || source == "archive") && t.running,
			(onlyErrors || statusFilter == "error") && (t.running || t.exit == "OK"),
			statusFilter == "ok" && t.exit != "OK":
			continue
		}
		item := map[string]any{
			"upid": t.upid, "node": t.node, "pid": t.pid, "pstart": t.pstart,
			"starttime": t.start.Unix(), "type": t.typ, "id": t.id, "user": t.user,
		}
		if !t.running {
			item["endtime"] = t.end.Unix()
			item["status"] = t.exit
		}
		out = append(out, item)
	}
	if start >= len(out) {
		return []map[string]any{}, nil
	}
	out = out[start:]
	if limit > 0 && limit < len(out) {
		out = out[:limit]
	}
	return out, nil
}

func (c *Cluster) taskStatus(k *call) (any, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.findTask(k.vars["node"], k.vars["upid"])
	if t == nil {
		return nil, paramErr("upid", "no such task")
	}
	if err := k.mayTask(t, "Sys.Audit"); err != nil {
		return nil, err
	}
	res := map[string]any{
		"upid": t.upid, "node": t.node, "pid": t.pid, "pstart": t.pstart,
		"starttime": t.start.Unix(), "type": t.typ, "id": t.id, "user": t.user,
		"status": "running",
	}
	if !t.running {
		res["status"] = "stopped"
		res["exitstatus"] = t.exit
		res["endtime"] = t.end.Unix()
	}
	return res, nil
}

func (c *Cluster) taskLog(k *call) (any, error) {
	start := k.p.int("start", 0, 0)
	limit := k.p.int("limit", 50, 0)
	k.p.bool("download", false)
	if err := k.p.err(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.findTask(k.vars["node"], k.vars["upid"])
	if t == nil {
		return nil, paramErr("upid", "no such task")
	}
	if err := k.mayTask(t, "Sys.Audit"); err != nil {
		return nil, err
	}
	lines := t.log
	if len(lines) == 0 && !t.running {
		lines = []string{"no content"}
	}
	out := []map[string]any{}
	for i := start; i < len(lines) && (limit == 0 || len(out) < limit); i++ {
		out = append(out, map[string]any{"n": i + 1, "t": lines[i]})
	}
	return out, nil
}

// vmidString formats a VM ID as UPIDs and the task list carry it.
func vmidString(vmid int) string { return strconv.Itoa(vmid) }
