package web_test

import (
	"path/filepath"
	"testing"
	"time"

	"horizon/functions/apitest"
)

// BenchmarkConsole is the console's performance benchmark (`go tool task bench-web`). It
// deploys a stack whose log has 100 000 lines, then e2e/bench.mjs measures in Chromium the
// initial JS and CSS gzip size, the time to an interactive stack detail with that log, the
// long tasks while the log receives 1 000 lines/s for 20 s, and the heap afterwards.
func BenchmarkConsole(b *testing.B) {
	t := b
	web, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	npm(t, web, "run", "build")
	stream := filepath.Join(t.TempDir(), "stream")
	// The first deploy prints 100 000 lines; a run again while the file stream exists prints
	// 1 000 lines a second for 20 s.
	l := newLab(t, web, "if [ ! -e app/big-done ]; then mkdir -p app; seq -f 'bench line %g of 100000: the quick brown fox jumps over the lazy dog' 1 100000; touch app/big-done; fi\n"+
		"if [ -e '"+stream+"' ]; then for s in $(seq 1 20); do seq -f \"live line %g of second $s\" 1 1000; sleep 1; done; fi\n", false)
	machine := func(i int, node string) map[string]any {
		return map[string]any{"address_id": l.Addrs[i], "ssh_key_id": l.Key, "proxmox_server_id": l.Server, "node": node, "pool": "dev"}
	}
	stack := must(t, l.API, "POST", "/v1/stacks", l.Member, map[string]any{"team_id": l.Team, "name": "bench", "environment_id": l.Env,
		"template_id": l.Tmpl, "template_version": 1, "jobs": map[string]any{
			"db":  map[string]any{"executions": []any{machine(0, "pve1")}},
			"app": map[string]any{"executions": []any{machine(1, "pve2")}}}})["id"].(string)
	must(t, l.API, "POST", "/v1/stacks/"+stack+"/deploy", l.Member, nil)
	start := time.Now()
	for {
		st := l.API.Do("GET", "/v1/stacks/"+stack, apitest.Req{Token: l.Member}).Map()["state"]
		if st == "deployed" {
			break
		}
		if st == "failed" || time.Since(start) > 10*time.Minute {
			t.Fatalf("the bench stack is %v after %s", st, time.Since(start))
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("deployed a stack with a 100 000-line log in %s", time.Since(start).Round(time.Second))
	l.node(t, filepath.Join(web, "e2e", "bench.mjs"), 10*time.Minute, "STACK_ID="+stack, "STREAM_FILE="+stream, "DIST="+filepath.Join(web, "dist"))
}
