package worker_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"horizon/functions/apitest"
	"horizon/functions/apitest/labtest"
	"horizon/shared/nagios"
	"horizon/shared/nagios/nagiostest"
)

// withNagios registers a real Nagios (nagiostest) and makes it the lab environment's.
func (e *engine) withNagios(name string) *nagiostest.Server {
	e.t.Helper()
	n := nagiostest.Start(e.t, nagiostest.Options{})
	r := e.API.Do("POST", "/v1/nagios-servers", apitest.Req{Body: n.Registration(name)})
	if r.Status != 201 {
		e.t.Fatalf("register nagios: %d %s", r.Status, r.Body)
	}
	env := e.API.Do("PATCH", "/v1/environments/"+e.Env, apitest.Req{Body: map[string]any{"nagios_server_id": r.Map()["id"]}})
	if env.Status != 200 {
		e.t.Fatalf("environment: %d %s", env.Status, env.Body)
	}
	return n
}

// nagiosDraft drafts a sandbox-vm stack whose db (in the empty host group) and apps (in a group
// with members) choose Nagios, on addresses from first on.
func (e *engine) nagiosDraft(name string, first, apps int) string {
	e.t.Helper()
	r := e.postNagiosDraft(name, first, apps)
	if r.Status != 201 {
		e.t.Fatalf("draft: %d %s", r.Status, r.Body)
	}
	return r.Map()["id"].(string)
}

// postNagiosDraft posts the draft nagiosDraft makes and returns the answer.
func (e *engine) postNagiosDraft(name string, first, apps int) *apitest.Response {
	e.t.Helper()
	var app []any
	for i := range apps {
		app = append(app, e.Machine(first+1+i, map[string]any{"nagios": map[string]any{"hostgroup": nagiostest.Hostgroup}}))
	}
	r := e.API.Do("POST", "/v1/stacks", apitest.Req{Token: e.Member, Body: map[string]any{"team_id": e.Team, "name": name,
		"environment_id": e.Env, "template_id": e.Tmpl, "template_version": 1,
		"jobs": map[string]any{"db": map[string]any{"executions": []any{e.Machine(first, map[string]any{"nagios": map[string]any{"hostgroup": nagiostest.EmptyHostgroup}})}},
			"app": map[string]any{"executions": app}}}})
	return r
}

// nagiosSteps returns the kind, phase and state of the Nagios steps of the stack's latest run.
func (e *engine) nagiosSteps(stack string) []string {
	e.t.Helper()
	rows, err := e.API.DB.Query(context.Background(), `SELECT s.kind || '@' || s.phase || ':' || s.state FROM steps s
		WHERE s.run_id = (SELECT id FROM runs WHERE stack_id = $1 ORDER BY id DESC LIMIT 1) AND s.kind LIKE 'nagios%'`, stack)
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		_ = rows.Scan(&s)
		out = append(out, s)
	}
	return out
}

func hasAll(hosts []string, names ...string) bool {
	for _, n := range names {
		if !slices.Contains(hosts, n) {
			return false
		}
	}
	return true
}

func hasNone(hosts []string, prefix string) bool {
	return !slices.ContainsFunc(hosts, func(h string) bool { return strings.HasPrefix(h, prefix) })
}

// TestNagiosPublishesDeploysAndUnpublishesRemovals: two stacks deploying at once both land in
// the real Nagios (hosts with their host groups, one service per declared check), published by
// one step in a last phase; removing an execution re-publishes the stack without it; removing
// the stack unpublishes it first and leaves the other stack's hosts alone; moving the environment
// to another Nagios server moves the stack there at its next run.
func TestNagiosPublishesDeploysAndUnpublishesRemovals(t *testing.T) {
	t.Parallel()
	e := newEngine(t, engineOpts{})
	n := e.withNagios("nagios")
	shop, blog := e.nagiosDraft("shop", 0, 2), e.nagiosDraft("blog", 3, 1)
	for _, s := range []string{shop, blog} {
		if r := e.API.Do("POST", "/v1/stacks/"+s+"/deploy", apitest.Req{Token: e.Member}); r.Status != 202 {
			t.Fatalf("deploy: %d %s", r.Status, r.Body)
		}
	}
	e.waitState(shop, "deployed", 3*time.Minute)
	e.waitState(blog, "deployed", 3*time.Minute)
	if got := e.nagiosSteps(shop); !slices.Equal(got, []string{"nagios_publish@2:succeeded"}) {
		t.Fatalf("shop's Nagios steps %v, want one publish in the last phase", got)
	}
	hosts := n.WaitHosts(t, func(h []string) bool {
		return hasAll(h, "shop-db-0", "shop-app-0", "shop-app-1", "blog-db-0", "blog-app-0")
	})
	svc, err := n.Client().Services(t.Context())
	if err != nil || !slices.Equal(svc["shop-app-1"], []string{"check_http", "check_ssh"}) || !slices.Equal(svc["shop-db-0"], []string{"check_ssh"}) {
		t.Fatalf("services %v (%v); hosts %v", svc, err, hosts)
	}
	var pubHosts []string
	if err := e.API.DB.QueryRow(t.Context(), `SELECT hosts FROM nagios_publications WHERE stack_id = $1`, shop).Scan(&pubHosts); err != nil ||
		!slices.Equal(pubHosts, []string{"shop-app-0", "shop-app-1", "shop-db-0"}) {
		t.Fatalf("publication %v (%v)", pubHosts, err)
	}

	// Removing app[1] re-publishes the stack as it now is.
	cur, etag := e.get(shop)
	body := editBody(cur, nil)
	apps := body["jobs"].(map[string]any)["app"].(map[string]any)
	apps["executions"] = apps["executions"].([]any)[:1]
	if r := e.API.Do("PATCH", "/v1/stacks/"+shop, apitest.Req{Token: e.Member, Headers: map[string]string{"If-Match": etag}, Body: withConfirm(body)}); r.Status != 202 {
		t.Fatalf("save: %d %s", r.Status, r.Body)
	}
	e.waitState(shop, "deployed", 3*time.Minute)
	n.WaitHosts(t, func(h []string) bool {
		return !slices.Contains(h, "shop-app-1") && hasAll(h, "shop-app-0", "shop-db-0")
	})

	// Removing the stack unpublishes it first.
	if r := e.API.Do("DELETE", "/v1/stacks/"+shop, apitest.Req{Token: e.Member}); r.Status != 202 {
		t.Fatalf("remove: %d %s", r.Status, r.Body)
	}
	e.waitState(shop, "removed", 3*time.Minute)
	if got := e.nagiosSteps(shop); !slices.Equal(got, []string{"nagios_unpublish@0:succeeded"}) {
		t.Fatalf("removal's Nagios steps %v, want an unpublish in the first phase", got)
	}
	hosts = n.WaitHosts(t, func(h []string) bool { return hasNone(h, "shop-") })
	if !hasAll(hosts, "blog-db-0", "blog-app-0") {
		t.Fatalf("the other stack's hosts went too: %v", hosts)
	}
	if _, err := os.Stat(filepath.Join(n.Dir, nagios.FileName(mustUUID(t, shop)))); !os.IsNotExist(err) {
		t.Fatalf("the removed stack's file is still there: %v", err)
	}

	// The environment moves to another Nagios server: the next run publishes there and removes
	// the stack from the old one.
	moved := e.withNagios("nagios-2")
	if r := e.API.Do("POST", "/v1/stacks/"+blog+"/jobs/db/executions/0/run-again", apitest.Req{Token: e.Member}); r.Status != 202 {
		t.Fatalf("run again: %d %s", r.Status, r.Body)
	}
	e.waitState(blog, "deployed", 3*time.Minute)
	moved.WaitHosts(t, func(h []string) bool { return hasAll(h, "blog-db-0", "blog-app-0") })
	n.WaitHosts(t, func(h []string) bool { return hasNone(h, "blog-") })
	e.gateLinesEmpty()
}

// TestNagiosRefusesUnknownChecksAndFailedDeploysPublishNothing: a deploy whose checks need a
// command Nagios does not define, or a host group it does not have, is refused before it starts
// (422 naming the job and the command, or the field; the draft lists the command problem too);
// a deploy that fails publishes nothing.
func TestNagiosRefusesUnknownChecksAndFailedDeploysPublishNothing(t *testing.T) {
	t.Parallel()
	tmpl := strings.Replace(labtest.ExampleFile(t, "template.yaml"), "command: check_http", "command: check_nothing_such", 1)
	e := newEngine(t, engineOpts{override: map[string]string{
		"template.yaml":   tmpl,
		labtest.AppScript: labtest.AppScriptWith(t, "echo 'configure: refused' >&2; exit 3\n")}})
	n := e.withNagios("nagios")
	stack := e.nagiosDraft("bad", 0, 1)
	d := e.API.Do("GET", "/v1/stacks/"+stack, apitest.Req{Token: e.Member})
	if !strings.Contains(string(d.Body), `jobs.app.nagios[1].command`) || !strings.Contains(string(d.Body), "check_nothing_such") {
		t.Fatalf("the draft does not list the unknown command: %s", d.Body)
	}
	r := e.API.Do("POST", "/v1/stacks/"+stack+"/deploy", apitest.Req{Token: e.Member})
	if r.Status != 422 || !strings.Contains(string(r.Body), `"field":"jobs.app.nagios[1].command"`) || !strings.Contains(string(r.Body), "job app checks with command check_nothing_such") {
		t.Fatalf("deploy with an unknown command: %d %s", r.Status, r.Body)
	}
	if runs := e.runs(stack); len(runs) != 0 {
		t.Fatalf("a refused deploy started %d run(s)", len(runs))
	}

	// Checks Nagios knows, an unknown host group: refused on the field.
	e2 := newEngine(t, engineOpts{override: map[string]string{labtest.AppScript: labtest.AppScriptWith(t, "echo 'configure: refused' >&2; exit 3\n")}})
	// Without a Nagios server in the environment, saving a host group is refused.
	if r := e2.postNagiosDraft("fail", 0, 1); r.Status != 422 || !strings.Contains(string(r.Body), "has no Nagios server") {
		t.Fatalf("a host group without a Nagios server: %d %s", r.Status, r.Body)
	}
	n2 := e2.withNagios("nagios")
	stack2 := e2.nagiosDraft("fail", 0, 1)
	cur, etag := e2.get(stack2)
	body := editBody(cur, func(job string, ex map[string]any) {
		if job == "app" {
			ex["nagios"] = map[string]any{"hostgroup": "no-such-group"}
		}
	})
	if p := e2.API.Do("PATCH", "/v1/stacks/"+stack2, apitest.Req{Token: e2.Member, Headers: map[string]string{"If-Match": etag}, Body: body}); p.Status != 422 ||
		!strings.Contains(string(p.Body), `"field":"jobs.app.executions[0].nagios.hostgroup"`) {
		t.Fatalf("save an unknown host group: %d %s", p.Status, p.Body)
	}
	// A group the draft was saved with and that Nagios no longer has (as if its definition
	// was removed since): the deploy's live check refuses it.
	if _, err := e2.API.DB.Exec(t.Context(), `UPDATE executions SET config = jsonb_set(config, '{nagios_hostgroup}', '"no-such-group"')
		WHERE stack_id = $1 AND job = 'app'`, stack2); err != nil {
		t.Fatal(err)
	}
	r = e2.API.Do("POST", "/v1/stacks/"+stack2+"/deploy", apitest.Req{Token: e2.Member})
	if r.Status != 422 || !strings.Contains(string(r.Body), `"field":"jobs.app.executions[0].nagios.hostgroup"`) {
		t.Fatalf("deploy with an unknown host group: %d %s", r.Status, r.Body)
	}
	// A known (empty) group: the deploy starts, the app's script fails, nothing is published.
	cur, etag = e2.get(stack2)
	body = editBody(cur, func(job string, ex map[string]any) {
		ex["nagios"] = map[string]any{"hostgroup": nagiostest.EmptyHostgroup}
	})
	if p := e2.API.Do("PATCH", "/v1/stacks/"+stack2, apitest.Req{Token: e2.Member, Headers: map[string]string{"If-Match": etag}, Body: body}); p.Status != 200 {
		t.Fatalf("edit the draft: %d %s", p.Status, p.Body)
	}
	if r := e2.API.Do("POST", "/v1/stacks/"+stack2+"/deploy", apitest.Req{Token: e2.Member}); r.Status != 202 {
		t.Fatalf("deploy: %d %s", r.Status, r.Body)
	}
	e2.waitState(stack2, "failed", 3*time.Minute)
	if got := e2.nagiosSteps(stack2); !slices.Equal(got, []string{"nagios_publish@2:held"}) {
		t.Fatalf("a failed deploy's Nagios steps %v, want the publish held", got)
	}
	// Force-remove lists no Nagios host: the machine that was built was never published.
	fr := e2.API.Do("POST", "/v1/stacks/"+stack2+"/force-remove", apitest.Req{})
	if fr.Status != 200 || !strings.Contains(string(fr.Body), `"nagios_hosts":[]`) {
		t.Fatalf("force-remove manifest: %d %s", fr.Status, fr.Body)
	}
	for _, s := range []*nagiostest.Server{n, n2} {
		if entries, _ := os.ReadDir(s.Dir); len(entries) != 0 {
			t.Fatalf("Nagios got %d file(s)", len(entries))
		}
		if hosts := s.WaitHosts(t, func([]string) bool { return true }); !hasNone(hosts, "bad-") || !hasNone(hosts, "fail-") {
			t.Fatalf("Nagios hosts %v", hosts)
		}
	}
}

// TestNagiosLostMidPublishFailsTheStepAndARetryPublishes: when Nagios's host cannot be reached
// (its sshd stopped) while an edit publishes, the publish step fails with an error naming the
// Nagios server and the address, the stack's previous file stays in place and the stack ends
// failed (not busy); once Nagios is back, a retry publishes the stack as it now is.
func TestNagiosLostMidPublishFailsTheStepAndARetryPublishes(t *testing.T) {
	t.Parallel()
	e := newEngine(t, engineOpts{})
	n := e.withNagios("nagios-lost")
	stack := e.nagiosDraft("lost", 0, 1)
	if r := e.API.Do("POST", "/v1/stacks/"+stack+"/deploy", apitest.Req{Token: e.Member}); r.Status != 202 {
		t.Fatalf("deploy: %d %s", r.Status, r.Body)
	}
	e.waitState(stack, "deployed", 3*time.Minute)
	n.WaitHosts(t, func(h []string) bool { return hasAll(h, "lost-db-0", "lost-app-0") })
	file := filepath.Join(n.Dir, nagios.FileName(mustUUID(t, stack)))
	previous, err := os.ReadFile(file)
	if err != nil || !strings.Contains(string(previous), nagiostest.Hostgroup) {
		t.Fatalf("published file: %v\n%s", err, previous)
	}

	// Nagios's host is lost; the app moves to the empty host group, which re-publishes.
	n.SSH.Stop(t)
	cur, etag := e.get(stack)
	body := editBody(cur, func(job string, ex map[string]any) {
		if job == "app" {
			ex["nagios"] = map[string]any{"hostgroup": nagiostest.EmptyHostgroup}
		}
	})
	if r := e.API.Do("PATCH", "/v1/stacks/"+stack, apitest.Req{Token: e.Member, Headers: map[string]string{"If-Match": etag}, Body: withConfirm(body)}); r.Status != 202 {
		t.Fatalf("save: %d %s", r.Status, r.Body)
	}
	failed := e.waitState(stack, "failed", 3*time.Minute)
	onePublish := func(got []string, state string) bool {
		return len(got) == 1 && strings.HasPrefix(got[0], "nagios_publish@") && strings.HasSuffix(got[0], ":"+state)
	}
	if got := e.nagiosSteps(stack); !onePublish(got, "failed") {
		t.Fatalf("Nagios steps %v, want the publish failed", got)
	}
	var stepErr string
	if err := e.API.DB.QueryRow(t.Context(), `SELECT coalesce(error, '') FROM steps WHERE kind = 'nagios_publish'
		AND run_id = (SELECT id FROM runs WHERE stack_id = $1 ORDER BY id DESC LIMIT 1)`, stack).Scan(&stepErr); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stepErr, "Nagios server nagios-lost") || !strings.Contains(stepErr, n.SSH.Addr) {
		t.Fatalf("the step's error does not say what was lost: %q", stepErr)
	}
	if !slices.Contains(stringsOf(failed["allowed_actions"]), "retry_failed") {
		t.Fatalf("a failed publish leaves the stack without a retry: %v", failed["allowed_actions"])
	}
	if got, err := os.ReadFile(file); err != nil || string(got) != string(previous) {
		t.Fatalf("the previous file changed: %v\n%s", err, got)
	}

	// Nagios is back: a retry publishes the stack as it now is.
	n.SSH.Start(t)
	if r := e.API.Do("POST", "/v1/stacks/"+stack+"/retry", apitest.Req{Token: e.Member}); r.Status != 202 {
		t.Fatalf("retry: %d %s", r.Status, r.Body)
	}
	e.waitState(stack, "deployed", 3*time.Minute)
	if got := e.nagiosSteps(stack); !onePublish(got, "succeeded") {
		t.Fatalf("the retry's Nagios steps %v, want the publish succeeded", got)
	}
	if got, err := os.ReadFile(file); err != nil || strings.Contains(string(got), nagiostest.Hostgroup) ||
		!strings.Contains(string(got), "lost-app-0") {
		t.Fatalf("the retry did not publish the edit: %v\n%s", err, got)
	}
	n.WaitHosts(t, func(h []string) bool { return hasAll(h, "lost-db-0", "lost-app-0") })
	e.gateLinesEmpty()
}
