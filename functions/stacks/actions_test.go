package stacks_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"horizon/functions/apitest"
	"horizon/functions/apitest/labtest"
	"horizon/shared/auth"
	"horizon/shared/horizon"

	"github.com/google/uuid"
)

// secretPrefill adds to the example's action an input prefilled from the app job's secret
// output, which the API must never send.
func secretPrefill(t testing.TB) map[string]string {
	tmpl := labtest.ExampleFile(t, "template.yaml")
	tmpl = strings.Replace(tmpl, `      db_host: "${jobs.db.outputs.ip}"
    outputs:`, `      db_host: "${jobs.db.outputs.ip}"
      old_key: "${jobs.app.outputs.api_key}"
    outputs:`, 1)
	if !strings.Contains(tmpl, "old_key") {
		t.Fatal("the example's action changed: cannot add the secret prefill")
	}
	return map[string]string{"template.yaml": tmpl}
}

// actionsState digests what an action run would change: stacks, runs, steps, action runs.
func actionsState(t testing.TB, e *labtest.Lab) string {
	var b strings.Builder
	for _, table := range []string{"stacks", "runs", "steps", "action_runs", "executions", "state_history"} {
		var digest *string
		q := fmt.Sprintf(`SELECT md5(string_agg(r::text, ',' ORDER BY r::text)) FROM (SELECT * FROM %s) r`, table)
		if err := e.API.DB.QueryRow(context.Background(), q).Scan(&digest); err != nil {
			t.Fatal(err)
		}
		d := "empty"
		if digest != nil {
			d = *digest
		}
		fmt.Fprintf(&b, "%s=%s\n", table, d)
	}
	return b.String()
}

// deployedInDB makes a draft look deployed, without workers: every execution applied, the db
// answering at 10.9.0.<index>, each app holding a secret api_key.
func deployedInDB(t testing.TB, e *labtest.Lab, stack string) {
	ctx := context.Background()
	sealed, _ := json.Marshal(map[string]string{"api_key": "s3cret-api-key-value"})
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`UPDATE stacks SET state = 'deployed', deployed_at = now() WHERE id = $1`, []any{stack}},
		{`UPDATE executions SET applied_hash = 'sha256:x', outputs = jsonb_build_object('ip', '10.9.0.' || index) WHERE stack_id = $1`, []any{stack}},
		{`UPDATE executions SET secret_outputs = $2 WHERE stack_id = $1 AND job = 'app'`, []any{stack, e.API.Deps.Box.Seal(horizon.PurposeSecretOutputs, sealed)}},
	} {
		if _, err := e.API.DB.Exec(ctx, q.sql, q.args...); err != nil {
			t.Fatal(err)
		}
	}
}

// TestActionFormsAndRefusals: a stack's actions come with their parameters' schema, the
// machines they may run on and their inputs prefilled from its outputs (a secret one never
// sent); a run of an action is refused, with the field named and nothing changed, when the
// action is unknown, its answers or machine are wrong, the stack is a draft or busy or removed,
// the caller a viewer or of another team. A good request starts a run of kind action, once per
// Idempotency-Key.
func TestActionFormsAndRefusals(t *testing.T) {
	t.Parallel()
	e := labtest.New(t, labtest.Options{Override: secretPrefill(t)})
	stack := e.Draft("acts", 2)
	path := "/v1/stacks/" + stack + "/actions/rotate-api-key"
	ok := map[string]any{"parameters": map[string]any{"key_bytes": 24}, "execution": 1}

	refused := func(what string, token string, name string, body any, status int, field string) {
		t.Helper()
		before := actionsState(t, e)
		r := e.API.Do("POST", "/v1/stacks/"+stack+"/actions/"+name, apitest.Req{Token: token, Body: body})
		p := r.Problem()
		if r.Status != status || (field != "" && !slices.Contains(p.Fields(), field)) {
			t.Errorf("%s: %d %v (%s), want %d on %q", what, r.Status, p.Fields(), r.Body, status, field)
		}
		if actionsState(t, e) != before {
			t.Errorf("%s: a refused action changed the stack's runs", what)
		}
	}
	refused("a draft", e.Member, "rotate-api-key", ok, 409, "")

	deployedInDB(t, e, stack)
	get := e.API.Do("GET", "/v1/stacks/"+stack+"/actions", apitest.Req{Token: e.Viewer})
	if get.Status != 200 {
		t.Fatalf("actions: %d %s", get.Status, get.Body)
	}
	if strings.Contains(string(get.Body), "s3cret-api-key-value") {
		t.Fatal("a secret prefill was sent")
	}
	items := get.Map()["items"].([]any)
	if len(items) != 2 || items[1].(map[string]any)["name"] != "create-pool" || items[1].(map[string]any)["kind"] != "terraform" {
		t.Fatalf("actions: %v", items)
	}
	a := items[0].(map[string]any)
	if a["name"] != "rotate-api-key" || a["job"] != "app" || a["execution"] != nil || len(a["executions"].([]any)) != 2 {
		t.Errorf("action: %v", a)
	}
	if kb := a["parameters"].(map[string]any)["properties"].(map[string]any)["key_bytes"].(map[string]any); kb["maximum"] != 64.0 {
		t.Errorf("key_bytes schema: %v", kb)
	}
	inputs := map[string]map[string]any{}
	for _, in := range a["inputs"].([]any) {
		m := in.(map[string]any)
		inputs[m["name"].(string)] = m
	}
	if in := inputs["db_host"]; in["value"] != "10.9.0.0" || in["secret"] != false || in["from"] != "db.outputs.ip" {
		t.Errorf("db_host prefill: %v", in)
	}
	if in := inputs["old_key"]; in["value"] != nil || in["secret"] != true || in["from"] != "app.outputs.api_key" {
		t.Errorf("old_key prefill: %v", in)
	}
	if s := e.API.Do("GET", "/v1/stacks/"+stack, apitest.Req{Token: e.Member}).Map(); !slices.Contains(stringsOf(s["allowed_actions"]), "run_action") {
		t.Errorf("a deployed stack's actions %v lack run_action", s["allowed_actions"])
	}
	if s := e.API.Do("GET", "/v1/stacks/"+stack, apitest.Req{Token: e.Viewer}).Map(); slices.Contains(stringsOf(s["allowed_actions"]), "run_action") {
		t.Errorf("a viewer is offered run_action: %v", s["allowed_actions"])
	}

	other := e.API.NewTeam("others")
	_, stranger := e.API.NewUser(auth.RoleMember, other)
	refused("an unknown action", e.Member, "nope", ok, 404, "")
	refused("a viewer", e.Viewer, "rotate-api-key", ok, 403, "")
	refused("another team's stack", stranger, "rotate-api-key", ok, 404, "")
	refused("a parameter out of bounds", e.Member, "rotate-api-key", map[string]any{"parameters": map[string]any{"key_bytes": 4}, "execution": 1}, 422, "parameters.key_bytes")
	refused("a parameter of the wrong type", e.Member, "rotate-api-key", map[string]any{"parameters": map[string]any{"key_bytes": "many"}, "execution": 1}, 422, "parameters.key_bytes")
	refused("an unknown parameter", e.Member, "rotate-api-key", map[string]any{"parameters": map[string]any{"bytes": 4}, "execution": 1}, 422, "parameters.bytes")
	refused("an unknown input", e.Member, "rotate-api-key", map[string]any{"inputs": map[string]any{"host": "x"}, "execution": 1}, 422, "inputs.host")
	refused("no machine among two", e.Member, "rotate-api-key", map[string]any{}, 422, "execution")
	refused("a machine the job does not have", e.Member, "rotate-api-key", map[string]any{"execution": 7}, 422, "execution")
	if _, err := e.API.DB.Exec(t.Context(), `UPDATE executions SET applied_hash = NULL WHERE stack_id = $1 AND job = 'app' AND index = 0`, stack); err != nil {
		t.Fatal(err)
	}
	refused("a machine not built", e.Member, "rotate-api-key", map[string]any{"execution": 0}, 422, "execution")

	// A good request starts one run, however often it is sent with its key.
	key := map[string]string{"Idempotency-Key": "rotate-once"}
	body := map[string]any{"parameters": map[string]any{"key_bytes": 24}, "inputs": map[string]any{"old_key": "typed-over-secret"}, "execution": 1}
	first := e.API.Do("POST", path, apitest.Req{Token: e.Member, Body: body, Headers: key})
	if first.Status != 202 || first.Map()["kind"] != "action" || !strings.HasSuffix(first.Header.Get("Location"), first.Map()["id"].(string)) {
		t.Fatalf("run the action: %d %s", first.Status, first.Body)
	}
	again := e.API.Do("POST", path, apitest.Req{Token: e.Member, Body: body, Headers: key})
	if again.Status != 202 || again.Map()["id"] != first.Map()["id"] {
		t.Fatalf("the same key again: %d %s", again.Status, again.Body)
	}
	var runs, steps int
	var stepKind, plainInputs string
	var secretInputs []byte
	if err := e.API.DB.QueryRow(t.Context(), `SELECT (SELECT count(*) FROM runs WHERE stack_id = $1), (SELECT count(*) FROM steps),
		(SELECT kind FROM steps LIMIT 1), (SELECT inputs::text FROM action_runs), (SELECT secret_inputs FROM action_runs)`, stack).Scan(&runs, &steps, &stepKind, &plainInputs, &secretInputs); err != nil {
		t.Fatal(err)
	}
	if runs != 1 || steps != 1 || stepKind != "action_script" {
		t.Fatalf("runs %d, steps %d of kind %s; want one action_script step", runs, steps, stepKind)
	}
	if strings.Contains(plainInputs, "typed-over-secret") || strings.Contains(string(secretInputs), "typed-over-secret") || len(secretInputs) == 0 {
		t.Errorf("an input typed over a secret prefill is not sealed: inputs %s", plainInputs)
	}
	if s := e.API.Do("GET", "/v1/stacks/"+stack, apitest.Req{Token: e.Member}).Map(); s["state"] != "updating" || !slices.Equal(stringsOf(s["allowed_actions"]), []string{"cancel"}) {
		t.Errorf("a stack running an action: %v %v", s["state"], s["allowed_actions"])
	}
	refused("a run in progress", e.Member, "rotate-api-key", ok, 409, "")

	// Its history: the action runs alone, with the machine and the answers, secrets hidden.
	hist := e.API.Do("GET", "/v1/stacks/"+stack+"/runs?kind=action", apitest.Req{Token: e.Viewer})
	items = hist.Map()["items"].([]any)
	if hist.Status != 200 || len(items) != 1 || strings.Contains(string(hist.Body), "typed-over-secret") {
		t.Fatalf("the action history: %d %s", hist.Status, hist.Body)
	}
	act := items[0].(map[string]any)["action"].(map[string]any)
	if act["name"] != "rotate-api-key" || act["job"] != "app" || act["execution"] != 1.0 || act["parameters"].(map[string]any)["key_bytes"] != 24.0 ||
		act["inputs"].(map[string]any)["old_key"].(map[string]any)["secret"] != true {
		t.Errorf("the action run: %v", act)
	}
	if n := len(e.API.Do("GET", "/v1/stacks/"+stack+"/runs?kind=deploy", apitest.Req{Token: e.Viewer}).Map()["items"].([]any)); n != 0 {
		t.Errorf("%d deploy runs, want none", n)
	}

	e.API.FinishRun(uuid.MustParse(first.Map()["id"].(string)), horizon.RunSucceeded)
	if _, err := e.API.DB.Exec(t.Context(), `UPDATE stacks SET state = 'removed' WHERE id = $1`, stack); err != nil {
		t.Fatal(err)
	}
	refused("a removed stack", e.Member, "rotate-api-key", ok, 409, "")
}

// TestAnActionsGeneratedSecretIsGeneratedAndSealed: a terraform action's parameter marked
// secret and generate, left empty, is generated when the run starts, sealed with the run's
// secret answers (never in clear in the database nor in an answer) and shown as
// {"secret": true}; each run (instance) has its own. It used to be left out, and the run failed
// in the worker: "module variables without a value: seal".
func TestAnActionsGeneratedSecretIsGeneratedAndSealed(t *testing.T) {
	t.Parallel()
	tmpl := labtest.ExampleFile(t, "template.yaml")
	tmpl = strings.Replace(tmpl, `      - { name: comment, type: string, default: "", description: What the pool is for }
`, `      - { name: comment, type: string, default: "", description: What the pool is for }
      - { name: seal, type: string, secret: true, generate: true, description: A secret the pool's module needs }
`, 1)
	mod := labtest.ExampleFile(t, "actions/pool/main.tf")
	mod += "\nvariable \"seal\" {\n  type      = string\n  sensitive = true\n}\n"
	if !strings.Contains(tmpl, "name: seal") {
		t.Fatal("the example's action changed: cannot add the generated secret")
	}
	e := labtest.New(t, labtest.Options{Override: map[string]string{"template.yaml": tmpl, "actions/pool/main.tf": mod}})
	stack := e.Draft("sealed", 1)
	deployedInDB(t, e, stack)
	form := e.API.Do("GET", "/v1/stacks/"+stack+"/actions", apitest.Req{Token: e.Member})
	if !strings.Contains(string(form.Body), "x-horizon-generate") {
		t.Fatalf("the form does not mark the generated secret: %s", form.Body)
	}
	path := "/v1/stacks/" + stack + "/actions/create-pool"
	// A form that cannot be satisfied (an input whose prefill has no value) starts nothing.
	if _, err := e.API.DB.Exec(t.Context(), `UPDATE executions SET outputs = '{}' WHERE stack_id = $1 AND job = 'db'`, stack); err != nil {
		t.Fatal(err)
	}
	before := actionsState(t, e)
	if r := e.API.Do("POST", path, apitest.Req{Token: e.Member, Body: map[string]any{"parameters": map[string]any{"pool": "p0"}}}); r.Status != 422 ||
		!slices.Contains(r.Problem().Fields(), "inputs.db_host") {
		t.Fatalf("an input without a value: %d %s, want 422 on inputs.db_host", r.Status, r.Body)
	}
	if actionsState(t, e) != before {
		t.Fatal("a refused action changed the stack's runs")
	}
	deployedInDB(t, e, stack)
	var values []string
	for _, pool := range []string{"p1", "p2"} {
		r := e.API.Do("POST", path, apitest.Req{Token: e.Member, Body: map[string]any{"parameters": map[string]any{"pool": pool}}})
		if r.Status != 202 {
			t.Fatalf("run create-pool without the generated secret: %d %s", r.Status, r.Body)
		}
		run := r.Map()["id"].(string)
		var plain string
		var sealed []byte
		if err := e.API.DB.QueryRow(t.Context(), `SELECT parameters::text, secret_parameters FROM action_runs WHERE run_id = $1`, run).Scan(&plain, &sealed); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(plain, "seal") || len(sealed) == 0 {
			t.Fatalf("run %s: parameters %s, sealed %d bytes; want the generated secret sealed", run, plain, len(sealed))
		}
		b, err := e.API.Deps.Box.Open(horizon.PurposeActionParameters, sealed)
		if err != nil {
			t.Fatal(err)
		}
		var secrets map[string]string
		if err := json.Unmarshal(b, &secrets); err != nil {
			t.Fatal(err)
		}
		v := secrets["seal"]
		if len(v) < 32 || bytes.Contains(sealed, []byte(v)) {
			t.Fatalf("the generated secret %q (sealed: %v)", v, !bytes.Contains(sealed, []byte(v)))
		}
		values = append(values, v)
		hist := e.API.Do("GET", "/v1/stacks/"+stack+"/runs?kind=action", apitest.Req{Token: e.Member})
		newest := hist.Map()["items"].([]any)[0].(map[string]any)
		if strings.Contains(string(hist.Body), v) || newest["id"] != run ||
			newest["action"].(map[string]any)["parameters"].(map[string]any)["seal"].(map[string]any)["secret"] != true {
			t.Fatalf("the run shows its generated secret: %s", hist.Body)
		}
		e.API.FinishRun(uuid.MustParse(run), horizon.RunSucceeded)
		if _, err := e.API.DB.Exec(t.Context(), `UPDATE stacks SET state = 'deployed' WHERE id = $1`, stack); err != nil {
			t.Fatal(err)
		}
	}
	if values[0] == values[1] {
		t.Fatal("two instances got the same generated secret")
	}
}
