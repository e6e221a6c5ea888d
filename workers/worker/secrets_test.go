package worker_test

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"horizon/functions/apitest"
	"horizon/functions/apitest/labtest"
	"horizon/shared/horizon"
	"horizon/shared/secrets"
	"horizon/shared/testkit"
)

// TestSecretsNeverLeak: a secret parameter given by the user, a generated one and a secret
// script output never appear in the deploy log (Postgres and Redis streams), anywhere else in
// Redis (Asynq's task payloads and errors included), or in any API answer but reveal — neither
// in clear nor in the common encodings.
func TestSecretsNeverLeak(t *testing.T) {
	t.Parallel()
	// The app's script prints its secret parameter, in clear and base64: masking must catch it.
	leaky := labtest.AppScriptWith(t, "echo \"the password is $admin_password\"\nprintf %s \"$admin_password\" | base64\n")
	// Its secret output, printed right after it is written: in clear, split across two writes
	// of one line, and base64 on stderr.
	leaky += `key=$(<app/api_key)
echo "the api key is $key"
printf 'half of it: %s' "${key:0:16}"; sleep 0.5; printf '%s\n' "${key:16}"
printf %s "$key" | base64 >&2
`
	e := newEngine(t, engineOpts{override: map[string]string{labtest.AppScript: leaky}})
	given := "Sup3r-s3cret-" + fmt.Sprint(time.Now().UnixNano())
	stack := e.Draft("vault", 1)
	etag := e.API.Do("GET", "/v1/stacks/"+stack, apitest.Req{Token: e.Member}).Header.Get("ETag")
	r := e.API.Do("PATCH", "/v1/stacks/"+stack, apitest.Req{Token: e.Member, Headers: map[string]string{"If-Match": etag}, Body: map[string]any{
		"jobs": map[string]any{"db": map[string]any{"executions": []any{e.Machine(0, nil)}},
			"app": map[string]any{"executions": []any{e.Machine(1, map[string]any{"parameters": map[string]any{"admin_password": given}})}}}}})
	if r.Status != 200 {
		t.Fatalf("patch: %d %s", r.Status, r.Body)
	}
	var answers []string
	record := func(r *apitest.Response) *apitest.Response { answers = append(answers, string(r.Body)); return r }
	record(r)
	record(e.API.Do("POST", "/v1/stacks/"+stack+"/deploy", apitest.Req{Token: e.Member}))
	e.waitState(stack, "deployed", 3*time.Minute)
	for _, path := range []string{"", "/outputs", "/pipeline", "/history", "/runs"} {
		record(e.API.Do("GET", "/v1/stacks/"+stack+path, apitest.Req{Token: e.Member}))
	}
	apiKey := e.API.Do("POST", "/v1/stacks/"+stack+"/outputs/app/0/api_key/reveal", apitest.Req{Token: e.Member}).Map()["value"].(string)
	if apiKey == "" {
		t.Fatal("no api_key to look for")
	}
	secretsToFind := []string{given, apiKey}

	var logs []string
	rows, err := e.API.DB.Query(context.Background(), `SELECT text FROM log_lines WHERE stack_id = $1`, stack)
	masked := false
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		_ = rows.Scan(&s)
		logs = append(logs, s)
		masked = masked || strings.Contains(s, "the password is [masked]")
	}
	rows.Close()
	if len(logs) < 20 || !masked {
		t.Fatalf("%d log lines, masked line seen: %v: the scan would prove nothing", len(logs), masked)
	}
	redisDump := e.redisDump(t)
	for _, secret := range secretsToFind {
		for _, form := range encodings(secret) {
			for i, l := range logs {
				if strings.Contains(l, form) {
					t.Errorf("log line %d holds a secret (%q form): %s", i, form, l)
				}
			}
			if strings.Contains(redisDump, form) {
				t.Errorf("Redis holds a secret (%q form)", form)
			}
			for _, a := range answers {
				if strings.Contains(a, form) {
					t.Errorf("an API answer holds a secret: %.200s", a)
				}
			}
		}
	}
}

func encodings(s string) []string {
	return []string{s, base64.StdEncoding.EncodeToString([]byte(s)), base64.RawURLEncoding.EncodeToString([]byte(s)), hex.EncodeToString([]byte(s))}
}

// redisDump returns the values of every key of the test's namespace and of its Asynq queues.
func (e *engine) redisDump(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	rdb := e.API.Redis
	var b strings.Builder
	for _, pattern := range []string{e.API.Deps.Namespace + "*", "asynq:{" + e.API.Deps.Namespace + "*"} {
		iter := rdb.Scan(ctx, 0, pattern, 1000).Iterator()
		for iter.Next(ctx) {
			key := iter.Val()
			switch typ, _ := rdb.Type(ctx, key).Result(); typ {
			case "string":
				b.WriteString(rdb.Get(ctx, key).Val())
			case "hash":
				for k, v := range rdb.HGetAll(ctx, key).Val() {
					b.WriteString(k + "=" + v + "\n")
				}
			case "list":
				b.WriteString(strings.Join(rdb.LRange(ctx, key, 0, -1).Val(), "\n"))
			case "set":
				b.WriteString(strings.Join(rdb.SMembers(ctx, key).Val(), "\n"))
			case "zset":
				b.WriteString(strings.Join(rdb.ZRange(ctx, key, 0, -1).Val(), "\n"))
			case "stream":
				for _, m := range rdb.XRange(ctx, key, "-", "+").Val() {
					b.WriteString(fmt.Sprint(m.Values) + "\n")
				}
			}
		}
	}
	return b.String()
}

// TestSecretAcrossALongLineCutIsMasked: a script prints a line far longer than the 64 KiB a
// log line is held to, with a known secret where the first and the second cut fall. Cut
// before masking, each half of the secret was stored and streamed in plain text; the pieces
// put back together must hold no trace of it.
func TestSecretAcrossALongLineCutIsMasked(t *testing.T) {
	t.Parallel()
	long := `{ head -c 65530 /dev/zero | tr '\0' x; printf '%s' "$admin_password"; ` +
		`head -c 65510 /dev/zero | tr '\0' y; printf '%s' "$admin_password"; echo z; }` + "\n"
	e := newEngine(t, engineOpts{override: map[string]string{labtest.AppScript: labtest.AppScriptWith(t, long)}})
	stack := e.deployed("long", 1)

	var sealed []byte
	if err := e.API.DB.QueryRow(t.Context(), `SELECT secret_parameters FROM executions WHERE stack_id = $1 AND job = 'app'`, stack).Scan(&sealed); err != nil {
		t.Fatal(err)
	}
	plain, err := e.API.Deps.Box.Open(horizon.PurposeSecretParameters, sealed)
	if err != nil {
		t.Fatal(err)
	}
	var params map[string]string
	if err := json.Unmarshal(plain, &params); err != nil || len(params["admin_password"]) < 16 {
		t.Fatalf("admin_password: %v %q", err, params["admin_password"])
	}
	secret := params["admin_password"]

	var stored strings.Builder
	rows, err := e.API.DB.Query(t.Context(), `SELECT text FROM log_lines WHERE stack_id = $1 AND job = 'app' AND fd = 'stdout' ORDER BY stream_ms, stream_seq`, stack)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var text string
		if err := rows.Scan(&text); err != nil {
			t.Fatal(err)
		}
		stored.WriteString(text)
	}
	download := e.API.Do("GET", "/v1/stacks/"+stack+"/logs", apitest.Req{Token: e.Member})
	for name, text := range map[string]string{"log_lines": stored.String(), "download": strings.ReplaceAll(string(download.Body), "\n", "")} {
		if strings.Contains(text, secret) || strings.Contains(text, secret[:len(secret)/2]) && strings.Contains(text, secret[len(secret)/2:]) {
			t.Fatalf("%s holds the secret (or both its halves)", name)
		}
		if n := strings.Count(text, secrets.Masked); n != 2 {
			t.Fatalf("%s: %d masked secrets in the long line, want 2", name, n)
		}
	}
}

// TestSecretsOfAFailingScriptAreMasked: a script declares a secret of its own with
// ::add-mask:: before printing it, writes another to $HORIZON_SECRET_OUTPUT and then fails
// with it in its last stderr line. Neither reaches the log nor the failed card in clear.
func TestSecretsOfAFailingScriptAreMasked(t *testing.T) {
	t.Parallel()
	failing := `#!/usr/bin/env bash
set -euo pipefail
own=$(od -An -tx1 -N12 /dev/urandom | tr -d ' \n')
echo "::add-mask::$own"
echo "fetched the vault token $own"
out=$(od -An -tx1 -N12 /dev/urandom | tr -d ' \n')
echo "api_key=$out" >>"$HORIZON_SECRET_OUTPUT"
echo "$own $out" >"$HOME/leaked"
echo "cannot register the key $out with the license server" >&2
exit 4
`
	e := newEngine(t, engineOpts{override: map[string]string{labtest.AppScript: failing}})
	stack := e.Draft("vault", 1)
	if r := e.API.Do("POST", "/v1/stacks/"+stack+"/deploy", apitest.Req{Token: e.Member}); r.Status != 202 {
		t.Fatalf("deploy: %d %s", r.Status, r.Body)
	}
	e.waitState(stack, "failed", 3*time.Minute)
	var vmid int
	if err := e.API.DB.QueryRow(t.Context(), `SELECT vmid FROM executions WHERE stack_id = $1 AND job = 'app'`, stack).Scan(&vmid); err != nil {
		t.Fatal(err)
	}
	leaked, err := os.ReadFile(filepath.Join(e.Sandbox.Cluster("demo").VMDir(vmid), "leaked"))
	if err != nil {
		t.Fatal(err)
	}
	values := strings.Fields(string(leaked))
	if len(values) != 2 {
		t.Fatalf("the script's secrets: %q", leaked)
	}
	card, _ := e.pipeline(stack)["app[0]"]["error"].(string)
	if card != "cannot register the key [masked] with the license server (scripts configure exited with status 4)" {
		t.Fatalf("failed card %q", card)
	}
	text := e.logText(stack) + string(e.API.Do("GET", "/v1/stacks/"+stack+"/logs", apitest.Req{Token: e.Member}).Body)
	for _, v := range values {
		if strings.Contains(text, v) {
			t.Fatalf("the log holds the secret %s:\n%s", v, text)
		}
	}
	if !strings.Contains(text, "fetched the vault token [masked]") || !strings.Contains(text, "::add-mask::[masked]") {
		t.Fatalf("the log does not show the masked lines:\n%s", text)
	}
}

// TestSecretsAreSealedAtRest: a secret parameter, which the app's module hands on as a sensitive
// output and so Terraform keeps in its state, and a secret script output are in no Postgres
// table and no work dir, in clear or hex, after the deploy, after a re-apply that changes the
// secret, and after the removal. (The pg backend kept states as plain JSON.)
func TestSecretsAreSealedAtRest(t *testing.T) {
	t.Parallel()
	e := newEngine(t, engineOpts{})
	first := "Sealed1st" + fmt.Sprint(time.Now().UnixNano())
	stack := e.Draft("sealed", 1)
	setPassword := func(password string, confirm bool) *apitest.Response {
		cur, etag := e.get(stack)
		body := editBody(cur, func(job string, ex map[string]any) {
			if job == "app" {
				ex["parameters"].(map[string]any)["admin_password"] = password
			}
		})
		if confirm {
			body = withConfirm(body)
		}
		return e.API.Do("PATCH", "/v1/stacks/"+stack, apitest.Req{Token: e.Member, Headers: map[string]string{"If-Match": etag}, Body: body})
	}
	if r := setPassword(first, false); r.Status != 200 {
		t.Fatalf("patch the draft: %d %s", r.Status, r.Body)
	}
	if r := e.API.Do("POST", "/v1/stacks/"+stack+"/deploy", apitest.Req{Token: e.Member}); r.Status != 202 {
		t.Fatalf("deploy: %d %s", r.Status, r.Body)
	}
	e.waitState(stack, "deployed", 3*time.Minute)
	reveal := func(name string) string {
		return e.API.Do("POST", "/v1/stacks/"+stack+"/outputs/app/0/"+name+"/reveal", apitest.Req{Token: e.Member}).Map()["value"].(string)
	}
	// The module's sensitive output is the parameter: it went through Terraform's state.
	if got := reveal("admin_password"); got != first {
		t.Fatalf("admin_password output %q, want the parameter", got)
	}
	apiKey := reveal("api_key")
	e.noSecretsAtRest("after the deploy", first, apiKey)

	second := "Sealed2nd" + fmt.Sprint(time.Now().UnixNano())
	if r := setPassword(second, true); r.Status != 202 {
		t.Fatalf("re-apply with a new password: %d %s", r.Status, r.Body)
	}
	e.waitState(stack, "deployed", 3*time.Minute)
	if got := reveal("admin_password"); got != second {
		t.Fatalf("admin_password output after the re-apply %q", got)
	}
	e.noSecretsAtRest("after the re-apply", first, second, apiKey)

	if r := e.API.Do("DELETE", "/v1/stacks/"+stack, apitest.Req{Token: e.Member}); r.Status != 202 {
		t.Fatalf("remove: %d %s", r.Status, r.Body)
	}
	e.waitState(stack, "removed", 3*time.Minute)
	e.noSecretsAtRest("after the removal", first, second, apiKey)
}

// noSecretsAtRest fails the test when a table of the database or a file under the workers'
// work root holds one of the secrets in clear or hex.
func (e *engine) noSecretsAtRest(when string, secrets ...string) {
	e.t.Helper()
	for _, s := range secrets {
		if found := testkit.TablesHolding(e.t, e.API.DB, s); len(found) > 0 {
			e.t.Errorf("%s: a secret is stored in clear in %v", when, found)
		}
		err := filepath.WalkDir(e.workRoot, func(path string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return err
			}
			b, err := os.ReadFile(path)
			if err == nil && (strings.Contains(string(b), s) || strings.Contains(string(b), hex.EncodeToString([]byte(s)))) {
				e.t.Errorf("%s: a secret is in %s", when, path)
			}
			return nil
		})
		if err != nil {
			e.t.Fatal(err)
		}
	}
}
