package stacks

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/google/uuid"

	"horizon/functions/api"
	"horizon/shared/nagios"
	"horizon/shared/problem"
	"horizon/shared/template"

	"horizon/shared/horizon"
	"horizon/shared/runplan"
	"horizon/shared/store"
)

// withNagios adds a run's Nagios step to its steps. A removal unpublishes first (its first
// phase) when the stack has something published. Any other run that applies executions ends
// with a publish (its last phase) when the environment has a Nagios server or the stack has
// something published somewhere: the step writes the stack's file as its executions then are,
// or removes it when no machine chooses Nagios any more (and skips when there is nothing to do);
// when the environment changed Nagios servers since, the old server's file is removed too.
func withNagios(ctx context.Context, q store.Querier, l *loaded, kind horizon.RunKind, steps []horizon.Step) ([]horizon.Step, error) {
	if kind == horizon.RunAction {
		return steps, nil
	}
	pub, err := store.NagiosPublicationGet(ctx, q, l.stack.ID)
	published := err == nil
	if err != nil && !errors.Is(err, horizon.ErrNotFound) {
		return nil, err
	}
	if kind == horizon.RunRemove {
		if published {
			steps = runplan.Unpublish(steps, pub.NagiosServerID)
		}
		return steps, nil
	}
	env, err := store.EnvironmentGet(ctx, q, l.stack.EnvironmentID)
	if err != nil {
		return nil, err
	}
	switch {
	case env.NagiosServerID != nil && published && pub.NagiosServerID != *env.NagiosServerID:
		return runplan.Moved(runplan.Publish(steps, *env.NagiosServerID), pub.NagiosServerID), nil
	case env.NagiosServerID != nil:
		return runplan.Publish(steps, *env.NagiosServerID), nil
	case published:
		return runplan.Publish(steps, pub.NagiosServerID), nil
	}
	return steps, nil
}

// nagiosDown is the 503 of a deploy whose Nagios server does not answer: nothing started.
func nagiosDown(cat *catalogue, err error) error {
	return problem.Unavailable(err, "The Nagios server %s does not answer; nothing was started. Retry shortly.", cat.nagios.Name)
}

// askNagios asks the environment's Nagios server, before a deploy, what the offline check cannot
// know: its commands now (refreshing cat's, and the server's discovery, so that problems judges
// against them) and whether each host group the executions chose exists (the discovered list
// leaves out empty groups). A server that does not answer is a dependency down, a 503 like a
// silent cluster's (askClusters); one that answers and refuses is a problem of the request.
func askNagios(ctx context.Context, d api.Deps, cat *catalogue, def *template.Definition, execs []horizon.Execution) ([]horizon.FieldError, error) {
	groups := map[string][]string{} // host group → the fields that chose it
	for _, e := range execs {
		if job := def.Job(e.Job); job != nil && job.Machine && e.Config.NagiosHostgroup != "" && e.State != horizon.ExecutionRemoved {
			groups[e.Config.NagiosHostgroup] = append(groups[e.Config.NagiosHostgroup], execField(e.Job, e.Index, "nagios.hostgroup"))
		}
	}
	if cat.nagios == nil || len(groups) == 0 {
		return nil, nil
	}
	var p horizon.Problems
	client, _, err := nagios.Open(d.Box, *cat.nagios)
	if errors.Is(err, nagios.ErrNoSSH) {
		p.Add("environment_id", "the Nagios server %s has no SSH access registered, so nothing can be published to it", cat.nagios.Name)
		return fieldsOf(&p), nil
	}
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, preflightTimeout)
	defer cancel()
	found, err := client.Discover(ctx)
	if errors.Is(err, nagios.ErrUnreachable) {
		return nil, nagiosDown(cat, err)
	}
	if err != nil {
		p.Add("environment_id", "the Nagios server %s refused the preflight: %v", cat.nagios.Name, err)
		return fieldsOf(&p), nil
	}
	if err := store.NagiosServerDiscovered(ctx, d.DB, cat.nagios.ID, found.Hostgroups, found.Commands, nil); err != nil {
		return nil, err
	}
	now := time.Now()
	cat.nagios.Commands, cat.nagios.Hostgroups, cat.nagios.DiscoveredAt = found.Commands, found.Hostgroups, &now
	missing, err := missingHostgroups(ctx, client, found.Hostgroups, groups)
	if errors.Is(err, nagios.ErrUnreachable) {
		return nil, nagiosDown(cat, err)
	}
	if err != nil {
		p.Add("environment_id", "the Nagios server %s refused the preflight: %v", cat.nagios.Name, err)
	}
	for _, group := range missing {
		for _, f := range groups[group] {
			p.Add(f, "is not a host group of Nagios server %s", cat.nagios.Name)
		}
	}
	return fieldsOf(&p), nil
}

// missingHostgroups returns those of groups (name → the fields that chose it) that the server
// does not define, sorted: a group in listed (what hostgrouplist answered) exists; another is
// asked for by name, since the list leaves out host groups that have no member.
func missingHostgroups(ctx context.Context, client *nagios.Client, listed []string, groups map[string][]string) ([]string, error) {
	var missing []string
	for _, group := range slices.Sorted(maps.Keys(groups)) {
		if slices.Contains(listed, group) {
			continue
		}
		ok, err := client.HostgroupExists(ctx, group)
		if err != nil {
			return missing, err
		}
		if !ok {
			missing = append(missing, group)
		}
	}
	return missing, nil
}

// hostgroups is what the environment's Nagios server said, before a draft save's transaction,
// of the host groups the request chose: those it does not define. Server is the server asked,
// nil when none was (no host group chosen, no server, or it did not answer).
type hostgroups struct {
	server  *uuid.UUID
	missing map[string]bool
}

// askHostgroups asks the Nagios server of environment envID which of the host groups jobs
// chooses it does not define: a group in the discovered list exists, another is asked for by
// name (bounded by preflightTimeout). It runs before the save's transaction, which must not
// wait on Nagios; refuseHostgroups judges with its answer inside.
func askHostgroups(ctx context.Context, d api.Deps, envID uuid.UUID, jobs map[string]JobRequest) (hostgroups, error) {
	groups := map[string][]string{}
	for _, j := range jobs {
		for _, e := range j.Executions {
			if n := e.Nagios.Value(); n != nil && n.Hostgroup != "" {
				groups[n.Hostgroup] = nil
			}
		}
	}
	if len(groups) == 0 {
		return hostgroups{}, nil
	}
	env, err := store.EnvironmentGet(ctx, d.DB, envID)
	if errors.Is(err, horizon.ErrNotFound) || err == nil && env.NagiosServerID == nil {
		return hostgroups{}, nil // the transaction refuses the environment, or every group
	}
	if err != nil {
		return hostgroups{}, err
	}
	n, err := store.NagiosServerGet(ctx, d.DB, *env.NagiosServerID)
	if err != nil {
		return hostgroups{}, err
	}
	client, _, err := nagios.Open(d.Box, n)
	if client == nil {
		return hostgroups{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, preflightTimeout)
	defer cancel()
	missing, err := missingHostgroups(ctx, client, n.Hostgroups, groups)
	if err != nil {
		d.Log.WarnContext(ctx, "nagios does not answer; host groups left to the deploy's check", "nagios_server_id", n.ID, "error", err)
		return hostgroups{}, nil
	}
	asked := hostgroups{server: &n.ID, missing: map[string]bool{}}
	for _, g := range missing {
		asked.missing[g] = true
	}
	return asked, nil
}

// refuseHostgroups refuses a draft save that brings a Nagios choice the environment cannot take:
// a host group when the environment has no Nagios server, or one its server does not define
// (as asked, askHostgroups). A group the draft had before is left to problems and to the
// deploy's check (the server may have lost it since); so is a new group when Nagios did not
// answer, or the environment's server is no longer the one asked.
func refuseHostgroups(cat *catalogue, def *template.Definition, execs, had []horizon.Execution, asked hostgroups) error {
	known := map[string]bool{}
	for _, e := range had {
		known[e.Config.NagiosHostgroup] = true
	}
	var p horizon.Problems
	for _, e := range execs {
		group := e.Config.NagiosHostgroup
		if job := def.Job(e.Job); job == nil || !job.Machine || group == "" || known[group] || e.State == horizon.ExecutionRemoved {
			continue
		}
		field := execField(e.Job, e.Index, "nagios.hostgroup")
		switch {
		case cat.nagios == nil:
			p.Add(field, "the environment %s has no Nagios server: choose no host group", cat.env.Name)
		case asked.server != nil && *asked.server == cat.nagios.ID && asked.missing[group]:
			p.Add(field, "is not a host group of Nagios server %s", cat.nagios.Name)
		}
	}
	return p.SortedErr()
}

// fieldsOf returns p's problems, sorted.
func fieldsOf(p *horizon.Problems) []horizon.FieldError {
	if err := p.SortedErr(); err != nil {
		return err.(*horizon.ValidationError).Fields
	}
	return nil
}
