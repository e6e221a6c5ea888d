package steps

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/hibiken/asynq"
	"github.com/jackc/pgx/v5"

	"horizon/shared/auth"
	"horizon/shared/gate"
	"horizon/shared/horizon"
	"horizon/shared/nagios"
	"horizon/shared/store"
	"horizon/shared/template"
	"horizon/workers/attempt"
)

// Nagios runs nagios:publish tasks: a stack's nagios_publish step (its object file as its
// executions now are, on the step's Nagios server) and nagios_unpublish step (the file removed).
// The step's gate is the Nagios server's (horizon.NagiosGateNode), so that two stacks'
// publishes to one server never overlap; see shared/nagios for the write itself.
type Nagios struct {
	Steps *Handler
}

// nagiosWork is a Nagios step's attempt: the server and what to write there.
type nagiosWork struct {
	attempt.Loaded
	stack  horizon.Stack
	server horizon.NagiosServer
	target nagios.Target
	// hosts are the stack's built machines that chose Nagios (publish; none for unpublish).
	hosts []nagios.Host
	// published: the stack has a file on this server.
	published bool
}

// ProcessTask implements asynq.Handler.
func (n *Nagios) ProcessTask(ctx context.Context, t *asynq.Task) error {
	return attempt.Process(ctx, &n.Steps.Lifecycle, n, t)
}

// Load implements attempt.Kind: the stack, the Nagios server (its secrets opened) and, for a
// publish, the hosts: the stack's active, built machine executions that chose a host group,
// with their address and their job's checks.
func (n *Nagios) Load(ctx context.Context, l attempt.Loaded) (*nagiosWork, error) {
	h := n.Steps
	if !l.Step.Kind.Nagios() || l.Run.StackID == nil || l.Step.ServerID == nil {
		return nil, attempt.ErrStale
	}
	w := &nagiosWork{Loaded: l}
	var err error
	if w.stack, err = store.StackGet(ctx, h.DB, auth.Scope{All: true}, *l.Run.StackID); err != nil {
		return nil, err
	}
	w.StackID, w.TeamID = w.stack.ID, w.stack.TeamID
	w.Label = fmt.Sprintf("%s of stack %s", l.Step.Kind, w.stack.Name)
	if w.server, err = store.NagiosServerGet(ctx, h.DB, *l.Step.ServerID); err != nil {
		return w, attempt.IfNotFound(err, "the Nagios server %s no longer exists", *l.Step.ServerID)
	}
	var client *nagios.Client
	client, w.target, err = nagios.Open(h.Box, w.server)
	if errors.Is(err, nagios.ErrNoSSH) {
		return w, &attempt.Gone{Msg: fmt.Sprintf("Nagios server %s: %v", w.server.Name, err)}
	}
	if err != nil {
		return nil, err
	}
	w.Masker.Add(client.Password)
	pub, err := store.NagiosPublicationGet(ctx, h.DB, w.stack.ID)
	switch {
	case err == nil:
		w.published = pub.NagiosServerID == w.server.ID
	case !errors.Is(err, horizon.ErrNotFound):
		return nil, err
	}
	if l.Step.Kind == horizon.StepNagiosPublish {
		if w.hosts, err = n.hosts(ctx, w.stack); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// hosts are what a stack publishes now.
func (n *Nagios) hosts(ctx context.Context, stack horizon.Stack) ([]nagios.Host, error) {
	db := n.Steps.DB
	tv, err := store.TemplateVersionGet(ctx, db, stack.TemplateID, stack.TemplateVersion)
	if err != nil {
		return nil, err
	}
	def := &template.Definition{}
	if err := json.Unmarshal(tv.Definition, def); err != nil {
		return nil, fmt.Errorf("decode template %s version %d: %w", stack.TemplateID, stack.TemplateVersion, err)
	}
	execs, err := store.ExecutionsOfStack(ctx, db, stack.ID, false)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(execs, func(a, b horizon.Execution) int {
		if a.Job != b.Job {
			if a.Job < b.Job {
				return -1
			}
			return 1
		}
		return a.Index - b.Index
	})
	var hosts []nagios.Host
	for _, e := range execs {
		job := def.Job(e.Job)
		if job == nil || !job.Machine || e.State != horizon.ExecutionActive || e.AppliedHash == nil ||
			e.Config.NagiosHostgroup == "" || e.Config.AddressID == nil {
			continue
		}
		a, err := store.AddressByID(ctx, db, *e.Config.AddressID)
		if err != nil {
			return nil, err
		}
		host := nagios.Host{Name: e.MachineName(stack.Name), Address: a.IP.String(),
			Alias: fmt.Sprintf("%s %s[%d]", stack.Name, e.Job, e.Index), Hostgroups: []string{e.Config.NagiosHostgroup}}
		for _, c := range job.Nagios {
			host.Checks = append(host.Checks, nagios.Check{Command: c.Command, Args: c.Args})
		}
		hosts = append(hosts, host)
	}
	return hosts, nil
}

// Unneeded implements attempt.Kind: a publish with nothing to write and nothing published there
// to remove. An unpublish always looks at the server (removing a file that is not there is a
// no-op): when the environment moved servers, the publish to the new one may already have
// re-recorded the stack's publication.
func (n *Nagios) Unneeded(w *nagiosWork) string {
	if w.Step.Kind == horizon.StepNagiosPublish && len(w.hosts) == 0 && !w.published {
		return "no machine chooses Nagios"
	}
	return ""
}

// Do implements attempt.Kind: it writes (or removes) the stack's file, verified and reloaded,
// under the Nagios server's gate, and records what is published.
func (n *Nagios) Do(ctx context.Context, w *nagiosWork, out *attempt.Log, lease *gate.Lease) (attempt.Result, error) {
	var contents []byte
	names := make([]string, 0, len(w.hosts))
	for _, h := range w.hosts {
		names = append(names, h.Name)
	}
	if len(w.hosts) > 0 {
		contents = nagios.Render(w.stack.Name, w.hosts)
		out.Say("publishing %d host(s) to Nagios server %s: %v", len(w.hosts), w.server.Name, names)
	} else {
		out.Say("removing the stack's hosts from Nagios server %s", w.server.Name)
	}
	err := attempt.UnderLease(ctx, lease, func(ctx context.Context) error {
		return nagios.Publish(ctx, w.target, nagios.FileName(w.stack.ID), contents)
	})
	if err != nil {
		return attempt.Result{}, fmt.Errorf("Nagios server %s: %w", w.server.Name, err)
	}
	out.Say("Nagios verified and reloaded its configuration")
	server := w.server.ID
	return attempt.Result{Record: func(ctx context.Context, tx pgx.Tx) error {
		if contents == nil {
			return store.NagiosPublicationDelete(ctx, tx, w.stack.ID, server)
		}
		return store.NagiosPublicationSet(ctx, tx, store.NagiosPublication{StackID: w.stack.ID, NagiosServerID: server, Hosts: names})
	}}, nil
}
