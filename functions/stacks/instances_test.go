package stacks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"horizon/functions/apitest"
	"horizon/functions/apitest/labtest"
	"horizon/shared/auth"
	"horizon/shared/horizon"
)

// instancesState digests what an undo would change: actionsState and the instances.
func instancesState(t testing.TB, e *labtest.Lab) string {
	var digest *string
	if err := e.API.DB.QueryRow(context.Background(),
		`SELECT md5(string_agg(r::text, ',' ORDER BY r::text)) FROM (SELECT * FROM action_instances) r`).Scan(&digest); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%sinstances=%v\n", actionsState(t, e), *digest)
}

// TestTerraformActionInstancesOverTheAPI: a terraform action's run makes an instance (its
// step an action_apply on it, in no machine); its undo is a run of kind action with one
// action_destroy step, refused with nothing changed while it is being undone or once undone,
// for a viewer, for another team (404) and for an unknown instance (404). A stack's removal
// undoes its instances, newest first, each in a phase of its own, before any destroy; its
// force-remove lists them (and their workspaces) in the manifest.
func TestTerraformActionInstancesOverTheAPI(t *testing.T) {
	t.Parallel()
	e := labtest.New(t, labtest.Options{})
	stack := e.Draft("pools", 1)
	deployedInDB(t, e, stack)
	ctx := t.Context()
	path := "/v1/stacks/" + stack + "/actions/create-pool"

	if r := e.API.Do("POST", path, apitest.Req{Token: e.Member, Body: map[string]any{"parameters": map[string]any{"pool": "p1"}, "execution": 0}}); r.Status != 422 ||
		!slices.Contains(r.Problem().Fields(), "execution") {
		t.Fatalf("a terraform action given a machine: %d %s", r.Status, r.Body)
	}
	if r := e.API.Do("POST", path, apitest.Req{Token: e.Member, Body: map[string]any{"parameters": map[string]any{"pool": "no spaces"}}}); r.Status != 422 ||
		!slices.Contains(r.Problem().Fields(), "parameters.pool") {
		t.Fatalf("a pool id against the pattern: %d %s", r.Status, r.Body)
	}
	// Two runs, two instances, numbered; each run's step works on its instance.
	for _, pool := range []string{"p1", "p2"} {
		r := e.API.Do("POST", path, apitest.Req{Token: e.Member, Body: map[string]any{"parameters": map[string]any{"pool": pool}}})
		if r.Status != 202 {
			t.Fatalf("run create-pool: %d %s", r.Status, r.Body)
		}
		list := e.API.Do("GET", "/v1/stacks/"+stack+"/action-instances", apitest.Req{Token: e.Viewer}).Map()["items"].([]any)
		if newest := list[0].(map[string]any); newest["state"] != "applying" || newest["run_id"] != r.Map()["id"] ||
			len(newest["allowed_actions"].([]any)) != 0 || newest["parameters"].(map[string]any)["pool"] != pool {
			t.Fatalf("the new instance: %v", newest)
		}
		var kind string
		var inst *uuid.UUID
		if err := e.API.DB.QueryRow(ctx, `SELECT kind, action_instance_id FROM steps WHERE run_id = $1`, r.Map()["id"]).Scan(&kind, &inst); err != nil {
			t.Fatal(err)
		}
		if kind != "action_apply" || inst == nil {
			t.Fatalf("the run's step: %s on %v", kind, inst)
		}
		e.API.FinishRun(uuid.MustParse(r.Map()["id"].(string)), horizon.RunSucceeded)
		if _, err := e.API.DB.Exec(ctx, `UPDATE stacks SET state = 'deployed' WHERE id = $1`, stack); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.API.DB.Exec(ctx, `UPDATE action_instances SET applied_at = now() WHERE stack_id = $1`, stack); err != nil {
		t.Fatal(err)
	}
	list := e.API.Do("GET", "/v1/stacks/"+stack+"/action-instances", apitest.Req{Token: e.Member}).Map()["items"].([]any)
	if len(list) != 2 {
		t.Fatalf("instances: %v", list)
	}
	newest, first := list[0].(map[string]any), list[1].(map[string]any)
	if first["number"] != 1.0 || newest["number"] != 2.0 || first["state"] != "active" || !slices.Equal(stringsOf(first["allowed_actions"]), []string{"undo"}) ||
		first["workspace"] != fmt.Sprintf("s%s-action-create-pool-1", stack) || first["template_version"] != 1.0 {
		t.Fatalf("the instances: %v", list)
	}
	firstPath := "/v1/stacks/" + stack + "/action-instances/" + first["id"].(string)

	// A secret output of the run that made it is revealed to members, recorded, and to no one
	// of another team, nor through another stack or as another output.
	sealed, _ := json.Marshal(map[string]string{"password": "s3cret-pool-password"})
	if _, err := e.API.DB.Exec(ctx, `UPDATE action_runs SET secret_outputs = $2 WHERE run_id = $1`, first["run_id"],
		e.API.Deps.Box.Seal(horizon.PurposeActionOutputs, sealed)); err != nil {
		t.Fatal(err)
	}
	reveal := "/v1/stacks/" + stack + "/runs/" + first["run_id"].(string) + "/outputs/password/reveal"
	if r := e.API.Do("POST", reveal, apitest.Req{Token: e.Member}); r.Status != 200 || r.Map()["value"] != "s3cret-pool-password" {
		t.Fatalf("reveal: %d %s", r.Status, r.Body)
	}
	if got := e.API.Do("GET", "/v1/stacks/"+stack+"/action-instances", apitest.Req{Token: e.Member}); strings.Contains(string(got.Body), "s3cret-pool-password") {
		t.Fatal("an instance's secret output is in the list")
	}
	other := e.API.NewTeam("others")
	_, stranger := e.API.NewUser(auth.RoleMember, other)
	otherStack := e.API.NewStack(other, "theirs")
	for what, c := range map[string]struct{ token, path string }{
		"another team":        {stranger, reveal},
		"through their stack": {stranger, "/v1/stacks/" + otherStack.String() + "/runs/" + first["run_id"].(string) + "/outputs/password/reveal"},
		"another output":      {e.Member, strings.Replace(reveal, "/password/", "/pool/", 1)},
		"a viewer":            {e.Viewer, reveal},
	} {
		want := 404
		if what == "a viewer" {
			want = 403
		}
		if r := e.API.Do("POST", c.path, apitest.Req{Token: c.token}); r.Status != want {
			t.Errorf("reveal by %s: %d %s, want %d", what, r.Status, r.Body, want)
		}
	}
	var reveals int
	if err := e.API.DB.QueryRow(ctx, `SELECT count(*) FROM activity WHERE action = 'stack.output.reveal' AND details->>'run_id' = $1`, first["run_id"]).Scan(&reveals); err != nil || reveals != 1 {
		t.Fatalf("%d reveals recorded (%v), want 1", reveals, err)
	}

	refused := func(what, token, path string, status int) {
		t.Helper()
		before := instancesState(t, e)
		if r := e.API.Do("DELETE", path, apitest.Req{Token: token}); r.Status != status {
			t.Errorf("%s: %d %s, want %d", what, r.Status, r.Body, status)
		}
		if after := instancesState(t, e); after != before {
			t.Errorf("%s: a refused undo changed something:\n%s\n%s", what, before, after)
		}
	}
	refused("another team's", stranger, firstPath, 404)
	refused("through another stack", stranger, "/v1/stacks/"+otherStack.String()+"/action-instances/"+first["id"].(string), 404)
	refused("an unknown instance", e.Member, "/v1/stacks/"+stack+"/action-instances/"+uuid.NewString(), 404)
	refused("a viewer", e.Viewer, firstPath, 403)

	// Two undos at once: one run.
	var both [2]*apitest.Response
	var wg sync.WaitGroup
	for i := range both {
		wg.Add(1)
		go func() { defer wg.Done(); both[i] = e.API.Do("DELETE", firstPath, apitest.Req{Token: e.Member}) }()
	}
	wg.Wait()
	undo, loser := both[0], both[1]
	if undo.Status != 202 {
		undo, loser = loser, undo
	}
	if undo.Status != 202 || undo.Map()["kind"] != "action" || loser.Status != 409 {
		t.Fatalf("two undos at once: %d %s and %d %s", both[0].Status, both[0].Body, both[1].Status, both[1].Body)
	}
	var kind string
	if err := e.API.DB.QueryRow(ctx, `SELECT kind FROM steps WHERE run_id = $1 AND action_instance_id = $2`, undo.Map()["id"], first["id"]).Scan(&kind); err != nil || kind != "action_destroy" {
		t.Fatalf("the undo's step: %q %v", kind, err)
	}
	hist := e.API.Do("GET", "/v1/stacks/"+stack+"/runs?kind=action", apitest.Req{Token: e.Member}).Map()["items"].([]any)
	if a := hist[0].(map[string]any)["action"].(map[string]any); a["undo"] != true || a["instance"] != first["id"] || a["name"] != "create-pool" {
		t.Fatalf("the undo in the history: %v", a)
	}
	if got := e.API.Do("GET", "/v1/stacks/"+stack+"/action-instances", apitest.Req{Token: e.Member}).Map()["items"].([]any)[1].(map[string]any); got["state"] != "undoing" {
		t.Fatalf("an instance being undone: %v", got)
	}
	refused("being undone", e.Member, firstPath, 409)
	e.API.FinishRun(uuid.MustParse(undo.Map()["id"].(string)), horizon.RunSucceeded)
	if _, err := e.API.DB.Exec(ctx, `UPDATE action_instances SET ended = 'undone', ended_at = now() WHERE id = $1`, first["id"]); err != nil {
		t.Fatal(err)
	}
	if _, err := e.API.DB.Exec(ctx, `UPDATE stacks SET state = 'deployed' WHERE id = $1`, stack); err != nil {
		t.Fatal(err)
	}
	refused("already undone", e.Member, firstPath, 409)
	if n := len(e.API.Do("GET", "/v1/stacks/"+stack+"/action-instances", apitest.Req{Token: e.Member}).Map()["items"].([]any)); n != 1 {
		t.Fatalf("%d instances after the undo, want 1", n)
	}

	// A third instance; the removal undoes #3 then #2, one phase each, before the destroys.
	r := e.API.Do("POST", path, apitest.Req{Token: e.Member, Body: map[string]any{"parameters": map[string]any{"pool": "p3"}}})
	if r.Status != 202 {
		t.Fatalf("run create-pool: %d %s", r.Status, r.Body)
	}
	e.API.FinishRun(uuid.MustParse(r.Map()["id"].(string)), horizon.RunFailed)
	if _, err := e.API.DB.Exec(ctx, `UPDATE stacks SET state = 'deployed' WHERE id = $1`, stack); err != nil {
		t.Fatal(err)
	}
	if got := e.API.Do("GET", "/v1/stacks/"+stack+"/action-instances", apitest.Req{Token: e.Member}).Map()["items"].([]any)[0].(map[string]any); got["state"] != "failed" ||
		!slices.Equal(stringsOf(got["allowed_actions"]), []string{"undo"}) {
		t.Fatalf("an instance whose apply failed: %v", got)
	}
	rm := e.API.Do("DELETE", "/v1/stacks/"+stack, apitest.Req{Token: e.Member})
	if rm.Status != 202 {
		t.Fatalf("remove: %d %s", rm.Status, rm.Body)
	}
	rows, err := e.API.DB.Query(ctx, `SELECT s.phase, s.kind, coalesce(i.number, -1) FROM steps s LEFT JOIN action_instances i ON i.id = s.action_instance_id
		WHERE s.run_id = $1 ORDER BY s.position`, rm.Map()["id"])
	if err != nil {
		t.Fatal(err)
	}
	var plan []string
	for rows.Next() {
		var phase, number int
		var kind string
		_ = rows.Scan(&phase, &kind, &number)
		plan = append(plan, fmt.Sprintf("%d:%s:%d", phase, kind, number))
	}
	rows.Close()
	if len(plan) < 4 || !slices.Equal(plan[:2], []string{"0:action_destroy:3", "1:action_destroy:2"}) || !strings.HasPrefix(plan[2], "2:destroy:") {
		t.Fatalf("the removal's steps: %v", plan)
	}

	// Its removal failed: force-remove lists the instances it abandons, and marks them so.
	e.API.FinishRun(uuid.MustParse(rm.Map()["id"].(string)), horizon.RunFailed)
	if _, err := e.API.DB.Exec(ctx, `UPDATE stacks SET state = 'failed' WHERE id = $1`, stack); err != nil {
		t.Fatal(err)
	}
	_, admin := e.API.NewUser(auth.RoleAdmin)
	fr := e.API.Do("POST", "/v1/stacks/"+stack+"/force-remove", apitest.Req{Token: admin, Body: map[string]any{"confirm": true}})
	if fr.Status != 200 {
		t.Fatalf("force-remove: %d %s", fr.Status, fr.Body)
	}
	m := fr.Map()["manifest"].(map[string]any)
	abandoned := m["action_instances"].([]any)
	ws := fmt.Sprintf("s%s-action-create-pool-3", stack)
	if len(abandoned) != 2 || abandoned[0].(map[string]any)["workspace"] != ws || !slices.Contains(stringsOf(m["workspaces"]), ws) {
		t.Fatalf("the manifest: %v", m)
	}
	var left int
	if err := e.API.DB.QueryRow(ctx, `SELECT count(*) FROM action_instances WHERE stack_id = $1 AND ended IS NULL`, stack).Scan(&left); err != nil || left != 0 {
		t.Fatalf("%d instances not marked abandoned (%v)", left, err)
	}
}

// TestUndoHonoursIdempotencyKey: an undo sent twice with one Idempotency-Key starts one run
// and answers it both times (the second marked replayed); the key sent again for another
// instance is refused (422) with nothing changed. Another team sees neither the stack's
// actions nor its instances (404), and a removed stack's instances are not undone (409).
func TestUndoHonoursIdempotencyKey(t *testing.T) {
	t.Parallel()
	e := labtest.New(t, labtest.Options{})
	stack := e.Draft("idem", 1)
	deployedInDB(t, e, stack)
	ctx := t.Context()
	for _, pool := range []string{"p1", "p2"} {
		r := e.API.Do("POST", "/v1/stacks/"+stack+"/actions/create-pool", apitest.Req{Token: e.Member, Body: map[string]any{"parameters": map[string]any{"pool": pool}}})
		if r.Status != 202 {
			t.Fatalf("run create-pool: %d %s", r.Status, r.Body)
		}
		e.API.FinishRun(uuid.MustParse(r.Map()["id"].(string)), horizon.RunSucceeded)
		if _, err := e.API.DB.Exec(ctx, `UPDATE stacks SET state = 'deployed' WHERE id = $1`, stack); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.API.DB.Exec(ctx, `UPDATE action_instances SET applied_at = now() WHERE stack_id = $1`, stack); err != nil {
		t.Fatal(err)
	}
	list := e.API.Do("GET", "/v1/stacks/"+stack+"/action-instances", apitest.Req{Token: e.Member}).Map()["items"].([]any)
	second, first := list[0].(map[string]any)["id"].(string), list[1].(map[string]any)["id"].(string)
	key := map[string]string{"Idempotency-Key": "undo-the-first"}
	firstPath := "/v1/stacks/" + stack + "/action-instances/" + first

	undo := e.API.Do("DELETE", firstPath, apitest.Req{Token: e.Member, Headers: key})
	if undo.Status != 202 || undo.Map()["kind"] != "action" {
		t.Fatalf("undo: %d %s", undo.Status, undo.Body)
	}
	again := e.API.Do("DELETE", firstPath, apitest.Req{Token: e.Member, Headers: key})
	if again.Status != 202 || again.Map()["id"] != undo.Map()["id"] || again.Header.Get("Idempotent-Replayed") != "true" ||
		again.Header.Get("Location") != undo.Header.Get("Location") {
		t.Fatalf("the same undo with its key again: %d %s (replayed %q)", again.Status, again.Body, again.Header.Get("Idempotent-Replayed"))
	}
	var undos int
	if err := e.API.DB.QueryRow(ctx, `SELECT count(*) FROM action_runs WHERE undo AND instance_id = $1`, first).Scan(&undos); err != nil || undos != 1 {
		t.Fatalf("%d undo runs of the first instance (%v), want 1", undos, err)
	}

	// The key again, for the other instance: refused, nothing started.
	before := instancesState(t, e)
	other := e.API.Do("DELETE", "/v1/stacks/"+stack+"/action-instances/"+second, apitest.Req{Token: e.Member, Headers: key})
	if other.Status != 422 || other.Problem().Type != "urn:horizon:problem:idempotency-key-reused" {
		t.Fatalf("the key for another instance: %d %s", other.Status, other.Body)
	}
	if after := instancesState(t, e); after != before {
		t.Fatalf("a refused undo changed something:\n%s\n%s", before, after)
	}
	// Without the key, the undo in progress keeps the stack busy: 409.
	if r := e.API.Do("DELETE", "/v1/stacks/"+stack+"/action-instances/"+second, apitest.Req{Token: e.Member}); r.Status != 409 {
		t.Fatalf("an undo while another runs: %d %s", r.Status, r.Body)
	}

	outsider := e.API.NewTeam("outsiders")
	_, stranger := e.API.NewUser(auth.RoleMember, outsider)
	for _, path := range []string{"/v1/stacks/" + stack + "/actions", "/v1/stacks/" + stack + "/action-instances"} {
		if r := e.API.Do("GET", path, apitest.Req{Token: stranger}); r.Status != 404 || r.Problem().Status != 404 {
			t.Errorf("GET %s by another team: %d %s", path, r.Status, r.Body)
		}
	}

	e.API.FinishRun(uuid.MustParse(undo.Map()["id"].(string)), horizon.RunSucceeded)
	if _, err := e.API.DB.Exec(ctx, `UPDATE stacks SET state = 'removed' WHERE id = $1`, stack); err != nil {
		t.Fatal(err)
	}
	before = instancesState(t, e)
	if r := e.API.Do("DELETE", "/v1/stacks/"+stack+"/action-instances/"+second, apitest.Req{Token: e.Member}); r.Status != 409 || r.Problem().Status != 409 {
		t.Fatalf("an undo on a removed stack: %d %s", r.Status, r.Body)
	}
	if after := instancesState(t, e); after != before {
		t.Fatalf("a refused undo on a removed stack changed something:\n%s\n%s", before, after)
	}
}

// TestActionRepinsFollowTheStack: a terraform action's re-pin (what a force retry leaves) is
// the commit the stack shows and its next instance is made at; a duplicate keeps it (and its
// removal honours an Idempotency-Key); an upgrade to another version drops it for that
// version's pin.
func TestActionRepinsFollowTheStack(t *testing.T) {
	t.Parallel()
	e := labtest.New(t, labtest.Options{})
	stack := e.Draft("repins", 1)
	deployedInDB(t, e, stack)
	ctx := t.Context()
	v1 := e.API.Do("GET", "/v1/templates/"+e.Tmpl+"/versions/1", apitest.Req{}).Map()
	pinned := v1["commits"].(map[string]any)["actions"].(map[string]any)["create-pool"].(string)
	// Version 2 pins the branch's head now; the re-pin is a later commit.
	def := v1["definition"].(map[string]any)
	def["description"] = "version 2"
	if v := e.API.Do("POST", "/v1/templates/"+e.Tmpl+"/versions", apitest.Req{Body: map[string]any{"definition": def}}); v.Status != 201 {
		t.Fatalf("version 2: %d %s", v.Status, v.Body)
	}
	v2 := e.API.Do("GET", "/v1/templates/"+e.Tmpl+"/versions/2", apitest.Req{}).Map()["commits"].(map[string]any)["actions"].(map[string]any)["create-pool"]
	repin := e.Repo.Commit(map[string]string{"README.md": "a newer commit\n"})
	if _, err := e.API.DB.Exec(ctx, `UPDATE stacks SET action_commits = jsonb_build_object('create-pool', $2::text) WHERE id = $1`, stack, repin); err != nil {
		t.Fatal(err)
	}
	if s := e.API.Do("GET", "/v1/stacks/"+stack, apitest.Req{Token: e.Member}).Map(); repin == pinned || s["action_commits"].(map[string]any)["create-pool"] != repin {
		t.Fatalf("the stack's action commits %v, want the re-pin %s (version 1 pinned %s)", s["action_commits"], repin, pinned)
	}
	r := e.API.Do("POST", "/v1/stacks/"+stack+"/actions/create-pool", apitest.Req{Token: e.Member, Body: map[string]any{"parameters": map[string]any{"pool": "p1"}}})
	if r.Status != 202 {
		t.Fatalf("run create-pool: %d %s", r.Status, r.Body)
	}
	if in := e.API.Do("GET", "/v1/stacks/"+stack+"/action-instances", apitest.Req{Token: e.Member}).Map()["items"].([]any)[0].(map[string]any); in["commit"] != repin {
		t.Fatalf("the instance's commit %v, want the re-pin %s", in["commit"], repin)
	}
	e.API.FinishRun(uuid.MustParse(r.Map()["id"].(string)), horizon.RunSucceeded)
	if _, err := e.API.DB.Exec(ctx, `UPDATE stacks SET state = 'deployed' WHERE id = $1`, stack); err != nil {
		t.Fatal(err)
	}
	dup := e.API.Do("POST", "/v1/stacks/"+stack+"/duplicate", apitest.Req{Token: e.Member})
	if dup.Status != 201 || dup.Map()["action_commits"].(map[string]any)["create-pool"] != repin {
		t.Fatalf("the duplicate: %d %s", dup.Status, dup.Body)
	}
	// Its removal, sent twice with one Idempotency-Key, answers 204 twice (a removed draft
	// is refused without the key).
	remove := apitest.Req{Token: e.Member, Headers: map[string]string{"Idempotency-Key": "remove-the-copy"}}
	for i := range 2 {
		if r := e.API.Do("DELETE", "/v1/stacks/"+dup.Map()["id"].(string), remove); r.Status != 204 || (i == 1) != (r.Header.Get("Idempotent-Replayed") == "true") {
			t.Fatalf("remove the duplicate (%d): %d %s, replayed %q", i+1, r.Status, r.Body, r.Header.Get("Idempotent-Replayed"))
		}
	}

	if up := e.API.Do("POST", "/v1/stacks/"+stack+"/upgrade-template", apitest.Req{Body: map[string]any{"version": 2}}); up.Status != 202 {
		t.Fatalf("upgrade: %d %s", up.Status, up.Body)
	}
	var left string
	if err := e.API.DB.QueryRow(ctx, `SELECT action_commits::text FROM stacks WHERE id = $1`, stack).Scan(&left); err != nil || left != "{}" {
		t.Fatalf("the re-pins after the upgrade: %s (%v), want none", left, err)
	}
	if s := e.API.Do("GET", "/v1/stacks/"+stack, apitest.Req{Token: e.Member}).Map(); v2 == nil || v2 == repin || s["action_commits"].(map[string]any)["create-pool"] != v2 {
		t.Fatalf("after the upgrade the stack's action commits %v, want version 2's %v", s["action_commits"], v2)
	}
}
