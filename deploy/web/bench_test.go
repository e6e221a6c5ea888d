package web_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"horizon/functions/apitest"
)

// BenchmarkConsole is the console's performance benchmark (`go tool task bench-web`). It
// deploys a stack whose log has 100 000 lines, and one whose log is the example's own (a few
// hundred lines: the page's floor on this machine), then e2e/bench.mjs measures in Chromium
// the initial JS and CSS gzip size, the time to an interactive stack detail with either log,
// the long tasks while the long log receives 1 000 lines/s for 20 s, and the heap afterwards.
func BenchmarkConsole(b *testing.B) {
	t := b
	web, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	npm(t, web, "run", "build")
	dir := t.TempDir()
	big, stream := filepath.Join(dir, "big"), filepath.Join(dir, "stream")
	// A first deploy while the file big exists prints 100 000 lines; a run again while the
	// file stream exists prints 1 000 lines a second for 20 s.
	l := newLab(t, web, "if [ -e '"+big+"' ] && [ ! -e app/big-done ]; then mkdir -p app; seq -f 'bench line %g of 100000: the quick brown fox jumps over the lazy dog' 1 100000; touch app/big-done; fi\n"+
		"if [ -e '"+stream+"' ]; then for s in $(seq 1 20); do seq -f \"live line %g of second $s\" 1 1000; sleep 1; done; fi\n", false)
	machine := func(i int, node string) map[string]any {
		return map[string]any{"address_id": l.Addrs[i], "ssh_key_id": l.Key, "proxmox_server_id": l.Server, "node": node, "pool": "dev"}
	}
	deploy := func(name string, addr int) string {
		stack := must(t, l.API, "POST", "/v1/stacks", l.Member, map[string]any{"team_id": l.Team, "name": name, "environment_id": l.Env,
			"template_id": l.Tmpl, "template_version": 1, "jobs": map[string]any{
				"db":  map[string]any{"executions": []any{machine(addr, "pve1")}},
				"app": map[string]any{"executions": []any{machine(addr+1, "pve2")}}}})["id"].(string)
		must(t, l.API, "POST", "/v1/stacks/"+stack+"/deploy", l.Member, nil)
		start := time.Now()
		for {
			st := l.API.Do("GET", "/v1/stacks/"+stack, apitest.Req{Token: l.Member}).Map()["state"]
			if st == "deployed" {
				break
			}
			if st == "failed" || time.Since(start) > 10*time.Minute {
				t.Fatalf("the %s stack is %v after %s", name, st, time.Since(start))
			}
			time.Sleep(500 * time.Millisecond)
		}
		t.Logf("deployed the %s stack in %s", name, time.Since(start).Round(time.Second))
		return stack
	}
	floor := deploy("floor", 2)
	if err := os.WriteFile(big, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	stack := deploy("bench", 0)
	l.node(t, filepath.Join(web, "e2e", "bench.mjs"), 15*time.Minute, "STACK_ID="+stack, "FLOOR_STACK_ID="+floor, "STREAM_FILE="+stream,
		"DIST="+filepath.Join(web, "dist"))
}
