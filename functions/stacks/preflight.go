package stacks

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"golang.org/x/sync/errgroup"

	"horizon/shared/horizon"
	"horizon/shared/problem"
	"horizon/shared/proxmox"
	"horizon/shared/secrets"
	"horizon/shared/template"
)

// preflightTimeout bounds the questions a deploy asks Proxmox before it starts.
const preflightTimeout = 15 * time.Second

// clusterView is what a cluster says about itself right now.
type clusterView struct {
	online map[string]bool
	// vms by name, and every VM id in use.
	names map[string]int
	vmids []int
	// privileges the token holds, by the paths the executions' machines need.
	privileges map[string]map[string]bool
	err        error
}

// machinePaths are the ACL paths where a machine's privileges may come from: the VM (its
// reserved id, or /vms before it has one) and its pool.
func machinePaths(e horizon.Execution) []string {
	paths := []string{"/vms"}
	if e.VMID != nil {
		paths[0] = fmt.Sprintf("/vms/%d", *e.VMID)
	}
	if e.Config.Pool != "" {
		paths = append(paths, "/pool/"+e.Config.Pool)
	}
	return paths
}

// askClusters asks every cluster the executions use for its nodes' state and its VMs, in
// parallel. A cluster that does not answer (nothing listens, or no answer within the
// preflight's time or the request's) is a dependency down: a 503 the client retries, nothing
// started. A cluster that answers and refuses (the token, its privileges, its certificate) is
// reported as a problem of the request (liveProblems), for the operator to fix.
func askClusters(ctx context.Context, box *secrets.Box, cat *catalogue, execs []horizon.Execution) (map[uuid.UUID]*clusterView, error) {
	ctx, cancel := context.WithTimeout(ctx, preflightTimeout)
	defer cancel()
	views := map[uuid.UUID]*clusterView{}
	for _, e := range execs {
		id := e.Config.ProxmoxServerID
		if id == nil || cat.servers[*id] == nil {
			continue
		}
		if views[*id] == nil {
			views[*id] = &clusterView{privileges: map[string]map[string]bool{}}
		}
		for _, p := range machinePaths(e) {
			views[*id].privileges[p] = nil
		}
		if p := cat.bridgePath(e); p != "" {
			views[*id].privileges[p] = nil
		}
	}
	var g errgroup.Group
	for id, v := range views {
		srv := cat.servers[id]
		g.Go(func() error {
			v.err = askCluster(ctx, box, srv, v)
			return nil
		})
	}
	_ = g.Wait() // each goroutine records its own error
	for id, v := range views {
		if errors.Is(v.err, proxmox.ErrUnreachable) || errors.Is(v.err, context.DeadlineExceeded) {
			return nil, problem.Unavailable(v.err, "The Proxmox server %s does not answer; nothing was started. Retry shortly.", cat.servers[id].Name)
		}
	}
	return views, nil
}

func askCluster(ctx context.Context, box *secrets.Box, srv *horizon.ProxmoxServer, v *clusterView) error {
	client, err := proxmox.ForServer(box, *srv, preflightTimeout)
	if err != nil {
		return err
	}
	var nodes []struct {
		Node   string `json:"node"`
		Status string `json:"status"`
	}
	if err := client.Get(ctx, "/nodes", &nodes); err != nil {
		return err
	}
	v.online = map[string]bool{}
	for _, n := range nodes {
		v.online[n.Node] = n.Status == "online"
	}
	var vms []struct {
		VMID int    `json:"vmid"`
		Name string `json:"name"`
	}
	if err := client.Get(ctx, "/cluster/resources?type=vm", &vms); err != nil {
		return err
	}
	v.names = map[string]int{}
	for _, vm := range vms {
		v.names[vm.Name] = vm.VMID
		v.vmids = append(v.vmids, vm.VMID)
	}
	for path := range v.privileges {
		privs, err := client.Privileges(ctx, path)
		if err != nil {
			return fmt.Errorf("read the privileges of token %s: %w", srv.TokenID, err)
		}
		v.privileges[path] = privs
	}
	return nil
}

// lacking returns which machine privileges the token holds on none of paths.
func (v *clusterView) lacking(paths []string) []string {
	var missing []string
	for _, priv := range proxmox.MachinePrivileges {
		if !slices.ContainsFunc(paths, func(p string) bool { return v.privileges[p][priv] }) {
			missing = append(missing, priv)
		}
	}
	return missing
}

// liveProblems are what the clusters themselves say against a deploy: a node gone offline, a
// VM name already taken by a VM that is not the execution's own.
func liveProblems(def *template.Definition, stackName string, execs []horizon.Execution, cat *catalogue, views map[uuid.UUID]*clusterView) []horizon.FieldError {
	var p horizon.Problems
	for id, v := range views {
		if v.err != nil {
			p.Add("environment_id", "the Proxmox server %s refused the preflight: %v", cat.servers[id].Name, v.err)
		}
	}
	for _, e := range execs {
		job := def.Job(e.Job)
		if job == nil || !job.Machine || e.Config.ProxmoxServerID == nil {
			continue
		}
		v := views[*e.Config.ProxmoxServerID]
		if v == nil || v.err != nil {
			continue
		}
		field := func(f string) string { return execField(e.Job, e.Index, f) }
		if online, known := v.online[e.Config.Node]; known && !online {
			p.Add(field("node"), "is offline")
		}
		// A missing privilege would fail the build halfway, after other machines were made.
		token := cat.servers[*e.Config.ProxmoxServerID].TokenID
		if paths := machinePaths(e); len(v.lacking(paths)) > 0 {
			p.Add(field("pool"), "%s", proxmox.MissingPrivileges(token, v.lacking(paths), paths...))
		}
		if bridge := cat.bridgePath(e); bridge != "" && !v.privileges[bridge]["SDN.Use"] {
			p.Add(field("address_id"), "%s, the bridge of this address's network", proxmox.MissingPrivileges(token, []string{"SDN.Use"}, bridge))
		}
		name := e.MachineName(stackName)
		if vmid, taken := v.names[name]; taken && (e.VMID == nil || *e.VMID != vmid) {
			p.Add(field(""), "would be named %s, but VM %d of the cluster already has that name", name, vmid)
		}
	}
	if err := p.SortedErr(); err != nil {
		return err.(*horizon.ValidationError).Fields
	}
	return nil
}
