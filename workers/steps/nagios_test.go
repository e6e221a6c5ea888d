package steps_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"horizon/functions/apitest"
	"horizon/shared/horizon"
	"horizon/shared/nagios/nagiostest"
)

// withNagios registers a real Nagios (nagiostest) and makes it the lab environment's; it
// returns the server and its id.
func (l *lab) withNagios() (*nagiostest.Server, string) {
	l.T.Helper()
	n := nagiostest.Start(l.T, nagiostest.Options{})
	r := l.API.Do("POST", "/v1/nagios-servers", apitest.Req{Body: n.Registration("nagios")})
	if r.Status != 201 {
		l.T.Fatalf("register nagios: %d %s", r.Status, r.Body)
	}
	id := r.Map()["id"].(string)
	if env := l.API.Do("PATCH", "/v1/environments/"+l.Env, apitest.Req{Body: map[string]any{"nagios_server_id": id}}); env.Status != 200 {
		l.T.Fatalf("environment: %d %s", env.Status, env.Body)
	}
	return n, id
}

// nagiosDeploy drafts a stack of a db and one app, both in Nagios, deploys it and runs every
// step but the Nagios publish, which it returns queued.
func (l *lab) nagiosDeploy(name string) (uuid.UUID, horizon.Step) {
	l.T.Helper()
	r := l.API.Do("POST", "/v1/stacks", apitest.Req{Token: l.Member, Body: map[string]any{"team_id": l.Team, "name": name,
		"environment_id": l.Env, "template_id": l.Tmpl, "template_version": 1,
		"jobs": map[string]any{
			"db":  map[string]any{"executions": []any{l.Machine(0, map[string]any{"nagios": map[string]any{"hostgroup": nagiostest.EmptyHostgroup}})}},
			"app": map[string]any{"executions": []any{l.Machine(1, map[string]any{"nagios": map[string]any{"hostgroup": nagiostest.Hostgroup}})}}}}})
	if r.Status != 201 {
		l.T.Fatalf("draft: %d %s", r.Status, r.Body)
	}
	run := l.start("POST", "/v1/stacks/"+r.Map()["id"].(string)+"/deploy", nil)
	for q := l.queued(run); len(q) > 0; q = l.queued(run) {
		for _, s := range q {
			if s.Kind == horizon.StepNagiosPublish {
				return run, s
			}
			if err := l.k.Step(s); err != nil {
				l.T.Fatalf("%s of %s: %v", s.Kind, s.Job, err)
			}
		}
	}
	l.T.Fatalf("the deploy queued no Nagios publish: %+v", l.steps(run))
	return run, horizon.Step{}
}

// TestNagiosPublishWritesTheStacksHosts: nagios:publish, the deploy's last step, writes the
// stack's machines to the real Nagios, which reloads and monitors them; the run succeeds.
func TestNagiosPublishWritesTheStacksHosts(t *testing.T) {
	t.Parallel()
	l := newLab(t, nil)
	n, _ := l.withNagios()
	run, publish := l.nagiosDeploy("mon")
	if err := l.k.Step(publish); err != nil {
		t.Fatal(err)
	}
	if s := l.step(publish.ID); s.State != horizon.StepSucceeded {
		t.Fatalf("publish %s: %s", s.State, deref(s.Error))
	}
	n.WaitHosts(t, func(hosts []string) bool {
		return slices.Contains(hosts, "mon-db-0") && slices.Contains(hosts, "mon-app-0")
	})
	if s := l.finish(run); s != horizon.RunSucceeded {
		t.Fatalf("the deploy ended %s", s)
	}
}

// TestNagiosPublishToADeletedServerFailsTheStep: the environment's Nagios server was detached
// and deleted while the stack deployed; its publish fails at once, naming the server.
func TestNagiosPublishToADeletedServerFailsTheStep(t *testing.T) {
	t.Parallel()
	l := newLab(t, nil)
	_, id := l.withNagios()
	_, publish := l.nagiosDeploy("mon")
	if env := l.API.Do("PATCH", "/v1/environments/"+l.Env, apitest.Req{Body: map[string]any{"nagios_server_id": nil}}); env.Status != 200 {
		t.Fatalf("detach nagios: %d %s", env.Status, env.Body)
	}
	if r := l.API.Do("DELETE", "/v1/nagios-servers/"+id, apitest.Req{}); r.Status != 204 {
		t.Fatalf("delete nagios: %d %s", r.Status, r.Body)
	}
	if err := l.k.Step(publish); err != nil {
		t.Fatal(err)
	}
	if s := l.step(publish.ID); s.State != horizon.StepFailed || !strings.Contains(deref(s.Error), "no longer exists") {
		t.Fatalf("publish %s: %q, want failed: the server no longer exists", s.State, deref(s.Error))
	}
}
