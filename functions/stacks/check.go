package stacks

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"horizon/shared/auth"
	"horizon/shared/horizon"
	"horizon/shared/store"
	"horizon/shared/template"
)

// catalogue is what answers are checked against: the stack's environment and what it names,
// and the team whose objects (SSH keys) the stack may use.
type catalogue struct {
	team     uuid.UUID
	env      horizon.Environment
	servers  map[uuid.UUID]*horizon.ProxmoxServer
	networks map[uuid.UUID]bool
	// bridges are the bridges of the executions' addresses' networks (loadBridges).
	bridges map[uuid.UUID]string
	// nagios is the environment's Nagios server, if it has one.
	nagios *horizon.NagiosServer
	// quota is the team's quota in env and what its other stacks use, read with env.
	quota store.QuotaInEnvironment
}

// loadBridges reads which bridge each execution's address plugs its machine into, for the
// preflight's privilege check.
func (c *catalogue) loadBridges(ctx context.Context, q store.Querier, execs []horizon.Execution) error {
	var ids []uuid.UUID
	for _, e := range execs {
		if e.Config.AddressID != nil {
			ids = append(ids, *e.Config.AddressID)
		}
	}
	var err error
	c.bridges, err = store.AddressBridges(ctx, q, ids)
	return err
}

// bridgePath is the ACL path of the bridge an execution's machine plugs into ("" when none is
// known): PVE checks SDN.Use there for a plain Linux bridge.
func (c *catalogue) bridgePath(e horizon.Execution) string {
	if e.Config.AddressID == nil || c.bridges[*e.Config.AddressID] == "" {
		return ""
	}
	return "/sdn/zones/localnetwork/" + c.bridges[*e.Config.AddressID]
}

// loadCatalogue reads environment envID as a change of stack (uuid.Nil for a new one) of team
// sees it, its team's quota and what the team's other stacks use included.
func loadCatalogue(ctx context.Context, q store.Querier, envID, team, stack uuid.UUID) (*catalogue, error) {
	env, qe, err := store.EnvironmentWithQuota(ctx, q, envID, team, stack)
	if err != nil {
		return nil, err
	}
	c := &catalogue{team: team, env: env, quota: qe, servers: map[uuid.UUID]*horizon.ProxmoxServer{}, networks: map[uuid.UUID]bool{}}
	for _, id := range env.ProxmoxServerIDs {
		s, err := store.ProxmoxServerGet(ctx, q, id)
		if err != nil {
			return nil, err
		}
		c.servers[id] = &s
	}
	for _, id := range env.NetworkIDs {
		c.networks[id] = true
	}
	if env.NagiosServerID != nil {
		n, err := store.NagiosServerGet(ctx, q, *env.NagiosServerID)
		if err != nil {
			return nil, err
		}
		c.nagios = &n
	}
	return c, nil
}

// preselect fills, for each machine execution, the attachments that have exactly one possible
// value, and returns their field paths.
func preselect(ctx context.Context, q store.Querier, def *template.Definition, execs []horizon.Execution, cat *catalogue, who auth.Principal) ([]string, error) {
	var filled []string
	keys, _, err := store.SSHKeyList(ctx, q, who, &who.UserID, store.Page{Limit: 2})
	if err != nil {
		return nil, err
	}
	free, err := freeAddresses(ctx, q, cat, 2+len(execs))
	if err != nil {
		return nil, err
	}
	taken := map[uuid.UUID]bool{}
	for _, e := range execs {
		if e.Config.AddressID != nil {
			taken[*e.Config.AddressID] = true
		}
	}
	for i := range execs {
		e := &execs[i]
		job := def.Job(e.Job)
		if job == nil || !job.Machine {
			continue
		}
		field := func(f string) string { return execField(e.Job, e.Index, f) }
		if e.Config.ProxmoxServerID == nil && len(cat.servers) == 1 {
			for id := range cat.servers {
				e.Config.ProxmoxServerID = &id
			}
			filled = append(filled, field("proxmox_server_id"))
		}
		if e.Config.ProxmoxServerID != nil {
			if srv := cat.servers[*e.Config.ProxmoxServerID]; srv != nil {
				if online := onlineNodes(srv); e.Config.Node == "" && len(online) == 1 {
					e.Config.Node = online[0]
					filled = append(filled, field("node"))
				}
				if e.Config.Pool == "" && len(srv.Pools) == 1 {
					e.Config.Pool = srv.Pools[0].Pool
					filled = append(filled, field("pool"))
				}
			}
		}
		if e.Config.SSHKeyID == nil && len(keys) == 1 {
			id := keys[0].ID
			e.Config.SSHKeyID = &id
			filled = append(filled, field("ssh_key_id"))
		}
		if e.Config.AddressID == nil {
			var candidates []uuid.UUID
			for _, a := range free {
				if !taken[a] {
					candidates = append(candidates, a)
				}
			}
			if len(candidates) == 1 {
				a := candidates[0]
				e.Config.AddressID = &a
				taken[a] = true
				filled = append(filled, field("address_id"))
			}
		}
	}
	return filled, nil
}

// freeAddresses returns up to limit free addresses of the environment's networks.
func freeAddresses(ctx context.Context, q store.Querier, cat *catalogue, limit int) ([]uuid.UUID, error) {
	var out []uuid.UUID
	free := false
	for id := range cat.networks {
		as, _, err := store.AddressList(ctx, q, id, store.AddressFilter{Attached: &free}, store.Page{Limit: limit})
		if err != nil {
			return nil, err
		}
		for _, a := range as {
			out = append(out, a.ID)
		}
	}
	return out, nil
}

func onlineNodes(s *horizon.ProxmoxServer) []string {
	var out []string
	for _, n := range s.Nodes {
		if n.Online {
			out = append(out, n.Name)
		}
	}
	return out
}

// problems lists, without asking Proxmox, everything that keeps the executions from being
// deployed: missing or invalid answers and attachments the environment does not offer.
func problems(ctx context.Context, q store.Querier, def *template.Definition, execs []horizon.Execution, cat *catalogue) ([]horizon.FieldError, error) {
	var p horizon.Problems
	counts := map[string]int{}
	addresses := map[uuid.UUID]string{}
	for _, e := range execs {
		counts[e.Job]++
		job := def.Job(e.Job)
		if job == nil {
			p.Add("jobs."+e.Job, "is no longer a job of this template version")
			continue
		}
		field := func(f string) string { return execField(e.Job, e.Index, f) }
		answers := map[string]any{}
		for k, v := range e.Config.Parameters {
			answers[k] = v
		}
		for _, name := range e.Config.SecretParameterNames {
			answers[name] = "********" // present; its value was checked as a string when given
		}
		for _, pm := range job.Parameters {
			if pm.Secret && pm.Generate {
				answers[pm.Name] = "generated"
			}
		}
		var pp horizon.Problems
		if err := job.Parameters.Check(answers); !pp.Merge("", err) && err != nil {
			return nil, err
		}
		if perr := pp.Err(); perr != nil {
			for _, fe := range perr.(*horizon.ValidationError).Fields {
				if pm := findParam(job, fe.Field); pm != nil && pm.Secret {
					continue // secrets hold no value to check here but presence
				}
				p.Add(field("parameters."+fe.Field), "%s", fe.Message)
			}
		}
		if !job.Machine {
			continue
		}
		if err := checkMachine(ctx, q, &p, field, e, job, cat, addresses); err != nil {
			return nil, err
		}
	}
	nagiosProblems(&p, def, execs, cat)
	for _, job := range def.Jobs() {
		lo, hi := job.Executions.Range()
		if n := counts[job.Name]; n < lo || n > hi {
			p.Add("jobs."+job.Name+".executions", "has %d executions; the template asks for %d to %d", n, lo, hi)
		}
	}
	if err := p.SortedErr(); err != nil {
		return err.(*horizon.ValidationError).Fields, nil
	}
	return nil, nil
}

// checkMachine checks the attachments of a machine execution.
func checkMachine(ctx context.Context, q store.Querier, p *horizon.Problems, field func(string) string, e horizon.Execution, job *template.Job,
	cat *catalogue, addresses map[uuid.UUID]string) error {
	cfg := e.Config
	if cfg.AddressID == nil {
		p.Add(field("address_id"), "is required: every machine needs an address")
	} else {
		a, err := store.AddressByID(ctx, q, *cfg.AddressID)
		switch {
		case err != nil:
			p.Add(field("address_id"), "is not an address")
		case !cat.networks[a.NetworkID]:
			p.Add(field("address_id"), "is on a network the environment %s does not use", cat.env.Name)
		case a.ExecutionID != nil && *a.ExecutionID != e.ID:
			p.Add(field("address_id"), "is attached to another machine")
		case addresses[a.ID] != "":
			p.Add(field("address_id"), "is also chosen for %s", addresses[a.ID])
		}
		addresses[*cfg.AddressID] = field("")
	}
	if cfg.SSHKeyID == nil {
		p.Add(field("ssh_key_id"), "is required: pick the SSH key to install")
	} else if usable, err := keyUsable(ctx, q, *cfg.SSHKeyID, cat.team); err != nil {
		return err
	} else if !usable {
		p.Add(field("ssh_key_id"), "%s", keyUnusable)
	}
	if job.ISO && cfg.ISOID == nil {
		p.Add(field("iso_id"), "is required: this job installs from an ISO")
	}
	if cfg.ProxmoxServerID == nil {
		p.Add(field("proxmox_server_id"), "is required")
		return nil
	}
	srv := cat.servers[*cfg.ProxmoxServerID]
	if srv == nil {
		p.Add(field("proxmox_server_id"), "is not a Proxmox server of the environment %s", cat.env.Name)
		return nil
	}
	switch node := srv.Node(cfg.Node); {
	case cfg.Node == "":
		p.Add(field("node"), "is required")
	case node == nil:
		p.Add(field("node"), "is not a node of %s", srv.Name)
	case !node.Online:
		p.Add(field("node"), "is offline")
	case node.SSHAddress == nil:
		p.Add(field("node"), "has no SSH endpoint in Horizon; an admin must set it on %s", srv.Name)
	case !hasSnippetStorage(srv, cfg.Node):
		p.Add(field("node"), "has no storage for snippets, so cloud-init cannot be uploaded")
	}
	if cfg.Pool == "" {
		p.Add(field("pool"), "is required")
	} else if !hasPool(srv, cfg.Pool) {
		p.Add(field("pool"), "is not a resource pool of %s", srv.Name)
	}
	if job.ISO && cfg.ISOID != nil {
		return checkISO(ctx, q, p, field, cfg, srv)
	}
	return nil
}

// keyUnusable is the problem of an SSH key a stack may not install.
const keyUnusable = "is not an SSH key of a member of the stack's team (it was deleted, or is someone else's): pick another key"

// keyUsable reports whether a stack of the team may install the key (store.SSHKeyForTeam).
func keyUsable(ctx context.Context, q store.Querier, id, team uuid.UUID) (bool, error) {
	_, err := store.SSHKeyForTeam(ctx, q, id, team)
	if errors.Is(err, horizon.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// refuseKeys refuses a save that brings an SSH key the stack's team may not use: a draft never
// takes another team's key (or one that does not exist). A key the stack had before (in had)
// and that was deleted since is left to problems, which lists it until someone picks another.
func refuseKeys(ctx context.Context, q store.Querier, team uuid.UUID, execs, had []horizon.Execution) error {
	known := map[uuid.UUID]bool{}
	for _, e := range had {
		if e.Config.SSHKeyID != nil {
			known[*e.Config.SSHKeyID] = true
		}
	}
	var p horizon.Problems
	for _, e := range execs {
		id := e.Config.SSHKeyID
		if id == nil || known[*id] {
			continue
		}
		usable, err := keyUsable(ctx, q, *id, team)
		if err != nil {
			return err
		}
		if !usable {
			p.Add(execField(e.Job, e.Index, "ssh_key_id"), "%s", keyUnusable)
		}
	}
	return p.Err()
}

func hasPool(s *horizon.ProxmoxServer, pool string) bool {
	for _, p := range s.Pools {
		if p.Pool == pool {
			return true
		}
	}
	return false
}

func hasSnippetStorage(s *horizon.ProxmoxServer, node string) bool {
	for _, st := range s.Storages {
		if st.Path == "" {
			continue
		}
		snippets, onNode := false, false
		for _, c := range st.Content {
			snippets = snippets || c == "snippets"
		}
		for _, n := range st.Nodes {
			onNode = onNode || n == node
		}
		if snippets && onNode {
			return true
		}
	}
	return false
}

// nagiosProblems checks the executions that chose Nagios against what the environment's Nagios
// server offered at its last discovery: there must be a server, and every command of the checks
// their jobs declare must be one it defines (named with the job). Host groups are checked
// against Nagios itself when a draft is saved (refuseHostgroups) and before a deploy
// (askNagios): the discovered list leaves out empty groups.
func nagiosProblems(p *horizon.Problems, def *template.Definition, execs []horizon.Execution, cat *catalogue) {
	jobs := map[string]bool{}
	for _, e := range execs {
		job := def.Job(e.Job)
		if job == nil || !job.Machine || e.Config.NagiosHostgroup == "" || e.State == horizon.ExecutionRemoved {
			continue
		}
		if cat.nagios == nil {
			p.Add(execField(e.Job, e.Index, "nagios.hostgroup"), "the environment %s has no Nagios server: choose no host group", cat.env.Name)
			continue
		}
		if jobs[e.Job] || cat.nagios.DiscoveredAt == nil {
			continue
		}
		jobs[e.Job] = true
		for i, c := range job.Nagios {
			if !slices.Contains(cat.nagios.Commands, c.Command) {
				p.Add(fmt.Sprintf("jobs.%s.nagios[%d].command", e.Job, i), "job %s checks with command %s, which Nagios server %s does not define",
					e.Job, c.Command, cat.nagios.Name)
			}
		}
	}
}
