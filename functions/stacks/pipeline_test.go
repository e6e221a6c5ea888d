package stacks_test

import (
	"fmt"
	"testing"

	"github.com/google/uuid"

	"horizon/functions/apitest"
	"horizon/functions/apitest/labtest"
	"horizon/shared/auth"
	"horizon/shared/horizon"
)

// TestPipelineIsTheStacksNotAnActions: the stack's pipeline is its latest run that changes it;
// an action run started since does not replace it (the action shows in the actions' history
// and by its own ?run=); an older run offers nothing on a machine removed since; the runs name
// who started them; another team's caller finds no pipeline.
func TestPipelineIsTheStacksNotAnActions(t *testing.T) {
	t.Parallel()
	e := labtest.New(t, labtest.Options{})
	stack := e.Draft("piped", 1)
	dep := e.API.Do("POST", "/v1/stacks/"+stack+"/deploy", apitest.Req{Token: e.Member, Headers: map[string]string{"Idempotency-Key": "d1"}})
	if dep.Status != 202 {
		t.Fatalf("deploy: %d %s", dep.Status, dep.Body)
	}
	deployRun := dep.Map()["id"].(string)
	e.API.FinishRun(uuid.MustParse(deployRun), horizon.RunSucceeded)
	deployedInDB(t, e, stack)
	act := e.API.Do("POST", "/v1/stacks/"+stack+"/actions/rotate-api-key", apitest.Req{Token: e.Member,
		Body: map[string]any{"execution": 0}, Headers: map[string]string{"Idempotency-Key": "a1"}})
	if act.Status != 202 {
		t.Fatalf("action: %d %s", act.Status, act.Body)
	}
	actionRun := act.Map()["id"].(string)

	p := e.API.Do("GET", "/v1/stacks/"+stack+"/pipeline", apitest.Req{Token: e.Viewer})
	run := p.Map()["run"].(map[string]any)
	if p.Status != 200 || run["id"] != deployRun || run["kind"] != "deploy" {
		t.Fatalf("the pipeline after an action: %d run %v %v, want the deploy %s", p.Status, run["kind"], run["id"], deployRun)
	}
	cards := 0
	for _, c := range p.Map()["columns"].([]any) {
		cards += len(c.(map[string]any)["cards"].([]any))
	}
	if cards != 2 {
		t.Errorf("the deploy's pipeline has %d cards, want its 2 jobs' executions", cards)
	}
	chosen := e.API.Do("GET", "/v1/stacks/"+stack+"/pipeline?run="+actionRun, apitest.Req{Token: e.Viewer})
	if chosen.Status != 200 || chosen.Map()["run"].(map[string]any)["kind"] != "action" {
		t.Fatalf("the action's own pipeline: %d %s", chosen.Status, chosen.Body)
	}
	// The deploy's card of a machine removed since offers nothing; the db's still runs again.
	e.API.FinishRun(uuid.MustParse(actionRun), horizon.RunSucceeded)
	if _, err := e.API.DB.Exec(t.Context(), `UPDATE stacks SET state = 'deployed' WHERE id = $1`, stack); err != nil {
		t.Fatal(err)
	}
	if _, err := e.API.DB.Exec(t.Context(), `UPDATE executions SET state = 'removed' WHERE stack_id = $1 AND job = 'app'`, stack); err != nil {
		t.Fatal(err)
	}
	offered := map[string]any{}
	for _, c := range e.API.Do("GET", "/v1/stacks/"+stack+"/pipeline?run="+deployRun, apitest.Req{Token: e.Member}).Map()["columns"].([]any) {
		for _, card := range c.(map[string]any)["cards"].([]any) {
			m := card.(map[string]any)
			offered[m["job"].(string)] = m["allowed_actions"]
		}
	}
	if fmt.Sprint(offered["db"]) != "[run_again]" || fmt.Sprint(offered["app"]) != "[]" {
		t.Errorf("an old run's cards offer %v; want run_again on db alone, nothing on the removed app", offered)
	}
	// The runs name who started them, for a reader who may not list users.
	me := e.API.Do("GET", "/v1/me", apitest.Req{Token: e.Member}).Map()["name"]
	for _, r := range e.API.Do("GET", "/v1/stacks/"+stack+"/runs", apitest.Req{Token: e.Viewer}).Map()["items"].([]any) {
		if got := r.(map[string]any)["actor_name"]; got != me {
			t.Errorf("run %v is credited to %v, want %v", r.(map[string]any)["kind"], got, me)
		}
	}
	other := e.API.NewTeam("strangers")
	_, stranger := e.API.NewUser(auth.RoleMember, other)
	if r := e.API.Do("GET", "/v1/stacks/"+stack+"/pipeline", apitest.Req{Token: stranger}); r.Status != 404 {
		t.Errorf("another team's pipeline: %d, want 404", r.Status)
	}
}
