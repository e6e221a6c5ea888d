package pve

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/h2non/gock"
	"github.com/luthermonson/go-proxmox/tests/mocks"
	"github.com/luthermonson/go-proxmox/tests/mocks/config"
)

// fixture is one of go-proxmox's recorded PVE 9 answers (tests/mocks/pve9x).
type fixture struct {
	method string
	path   *regexp.Regexp
	query  url.Values
	status int
	body   []byte
}

// loadFixtures reads the gock mocks go-proxmox registers, then unregisters them (gock
// swaps http.DefaultTransport while mocks are on; this test runs before parallel ones).
func loadFixtures(t *testing.T) []fixture {
	t.Helper()
	mocks.On(config.Config{URI: "http://fixture.invalid"})
	defer mocks.Off()
	var out []fixture
	for _, m := range gock.GetAll() {
		req, res := m.Request(), m.Response()
		re, err := regexp.Compile(req.URLStruct.Path)
		if err != nil {
			continue
		}
		out = append(out, fixture{method: req.Method, path: re, query: req.URLStruct.Query(), status: res.StatusCode, body: res.BodyBuffer})
	}
	if len(out) < 500 {
		t.Fatalf("only %d fixtures loaded", len(out))
	}
	return out
}

// find returns the data of the successful fixture for method and path (with query); when
// several match, the one matching most query parameters wins.
func findFixture(t *testing.T, fixtures []fixture, method, target string) any {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	best, bestScore := -1, -1
	for i, f := range fixtures {
		if f.method != method || f.status != 200 || !f.path.MatchString(u.Path) {
			continue
		}
		score := 0
		for k := range f.query {
			if u.Query().Get(k) != f.query.Get(k) {
				score = -1
				break
			}
			score++
		}
		if score > bestScore {
			best, bestScore = i, score
		}
	}
	if best < 0 {
		t.Fatalf("no fixture for %s %s", method, target)
	}
	var env struct{ Data any }
	if err := json.Unmarshal(fixtures[best].body, &env); err != nil {
		t.Fatalf("fixture %s %s: %v", method, target, err)
	}
	return env.Data
}

// keySets returns the keys of an object, or the union of the keys of an array's objects,
// grouped by the value of groupBy ("" = one group).
func keySets(data any, groupBy string) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	add := func(obj map[string]any) {
		g := ""
		if groupBy != "" {
			g, _ = obj[groupBy].(string)
		}
		if out[g] == nil {
			out[g] = map[string]bool{}
		}
		for k := range obj {
			out[g][k] = true
		}
	}
	switch d := data.(type) {
	case map[string]any:
		add(d)
	case []any:
		for _, item := range d {
			if obj, ok := item.(map[string]any); ok {
				add(obj)
			}
		}
	}
	return out
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestFixtureKeySets compares the JSON key sets of the sandbox's answers with go-proxmox's
// recorded PVE 9 answers for the same endpoints. Every fixture key must be in the sandbox's
// answer unless the case's allow-list says why it is left out; every key the sandbox adds
// must be in the fixture or in the schema's return description.
func TestFixtureKeySets(t *testing.T) {
	fixtures := loadFixtures(t)
	schema := loadSchema(t)
	e := newEnv(t, nil)
	e.seedFixtureTwins(t)

	cases := []struct {
		name    string
		sandbox string // under /api2/json, on node pve1
		schema  string // the schema's path template
		groupBy string
		pick    func(any) any // selects the compared part (default: all of data)
		// allow lists fixture keys the sandbox deliberately does not return, and why.
		allow map[string]string
		// extra lists keys the sandbox returns that neither the fixture nor the schema
		// has, and why they are right.
		extra map[string]string
	}{
		{name: "version", sandbox: "/version", schema: "/version"},
		{name: "nodes", sandbox: "/nodes", schema: "/nodes"},
		{name: "node status", sandbox: "/nodes/pve1/status", schema: "/nodes/{node}/status"},
		{name: "cluster status", sandbox: "/cluster/status", schema: "/cluster/status", groupBy: "type"},
		{name: "cluster resources", sandbox: "/cluster/resources", schema: "/cluster/resources", groupBy: "type"},
		{name: "pools", sandbox: "/pools", schema: "/pools"},
		{name: "pool", sandbox: "/pools?poolid=test-pool", schema: "/pools"},
		{name: "pool members", sandbox: "/pools?poolid=test-pool", schema: "", groupBy: "type",
			pick: func(d any) any { return d.([]any)[0].(map[string]any)["members"] }},
		{name: "storage config", sandbox: "/storage", schema: "/storage",
			allow: map[string]string{"nodes": "only storages restricted to some nodes carry it; the default config restricts none"}},
		{name: "storage config item", sandbox: "/storage/local", schema: "/storage/{storage}"},
		{name: "node storages", sandbox: "/nodes/pve1/storage", schema: "/nodes/{node}/storage"},
		{name: "node storage status", sandbox: "/nodes/pve1/storage/local/status", schema: "/nodes/{node}/storage/{storage}/status"},
		{name: "storage content", sandbox: "/nodes/pve1/storage/local/content", schema: "/nodes/{node}/storage/{storage}/content",
			extra: map[string]string{"content": "PVE returns each volume's content type (go-proxmox's content=vztmpl fixture has it); the schema omits it"}},
		{name: "storage content vztmpl", sandbox: "/nodes/pve1/storage/local/content?content=vztmpl", schema: "/nodes/{node}/storage/{storage}/content"},
		{name: "volume", sandbox: "/nodes/pve1/storage/local/content/local:iso/debian-12.iso", schema: "/nodes/{node}/storage/{storage}/content/{volume}",
			allow: map[string]string{"volid": "PVE's GET of one volume does not return it (not in the schema); go-proxmox's fixture adds it"}},
		{name: "vm config", sandbox: "/nodes/pve1/qemu/100/config", schema: "/nodes/{node}/qemu/{vmid}/config",
			allow: map[string]string{"vmid": "PVE's GET config does not return vmid (it is not in the schema's returns); the fixture is hand-made"}},
		{name: "vm status running", sandbox: "/nodes/pve1/qemu/101/status/current", schema: "/nodes/{node}/qemu/{vmid}/status/current",
			allow: map[string]string{
				"blockstat":       "QEMU block device statistics: no QEMU runs in the sandbox",
				"ballooninfo":     "QEMU balloon driver statistics: no QEMU runs in the sandbox",
				"balloon_min":     "only set with a balloon minimum configured",
				"proxmox-support": "QEMU/PBS feature flags: no QEMU runs in the sandbox",
				"spice":           "only for VMs with a SPICE display",
			}},
		{name: "tasks", sandbox: "/nodes/pve1/tasks", schema: "/nodes/{node}/tasks"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := mustOK(t, e.call(t, "GET", strings.SplitN(tc.sandbox, "?", 2)[0], queryOf(t, tc.sandbox)))
			target := strings.ReplaceAll(tc.sandbox, "pve1", "node1")
			target = strings.Replace(target, "/pools?", "/pools/?", 1)
			want := findFixture(t, fixtures, "GET", target)
			if tc.pick != nil {
				got, want = tc.pick(got), tc.pick(want)
			}
			gotSets, wantSets := keySets(got, tc.groupBy), keySets(want, tc.groupBy)
			var returned map[string]schemaProp
			open := true // the schema describes no keys, or allows additional ones
			if def, ok := schema[tc.schema]["GET"]; ok {
				r := def.Returns
				if r.Items != nil {
					r = *r.Items
				}
				returned, open = r.Properties, len(r.Properties) == 0 || r.AdditionalProperties != nil
			}
			for group, wantKeys := range wantSets {
				gotKeys, ok := gotSets[group]
				if !ok {
					t.Errorf("group %q: the sandbox returns none (fixture keys %v)", group, sortedSet(wantKeys))
					continue
				}
				for k := range wantKeys {
					if !gotKeys[k] && tc.allow[k] == "" {
						t.Errorf("group %q: key %q of the fixture is missing", group, k)
					}
				}
				for k := range gotKeys {
					if _, inSchema := returned[k]; !wantKeys[k] && !inSchema && !open && tc.extra[k] == "" {
						t.Errorf("group %q: key %q is neither in the fixture nor in the schema", group, k)
					}
				}
			}
		})
	}

	// Writes answer with a UPID string where the fixtures do.
	for _, path := range []string{"/nodes/node1/qemu", "/nodes/node1/qemu/100/status/start", "/nodes/node1/storage/local/download-url"} {
		if _, ok := findFixture(t, fixtures, "POST", path).(string); !ok {
			t.Errorf("fixture POST %s: data is not a string", path)
		}
	}
}

func queryOf(t *testing.T, target string) url.Values {
	t.Helper()
	_, q, ok := strings.Cut(target, "?")
	if !ok {
		return nil
	}
	v, err := url.ParseQuery(q)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// seedFixtureTwins creates what the fixtures show: an ISO, a container template and a
// backup on local, VM 100 with the fixture's config keys, VM 101 running with the agent,
// pool test-pool, and finished tasks.
func (e *testEnv) seedFixtureTwins(t *testing.T) {
	t.Helper()
	local := e.c.storage("local")
	dir := e.c.storageDir(local, "pve1")
	for name, body := range map[string]string{
		"template/iso/debian-12.iso":                             "iso",
		"template/cache/debian-12-standard_12.0-1_amd64.tar.zst": "tmpl",
		"dump/vzdump-qemu-100-2023_08_28-12_00_00.vma.zst":       "backup",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mustOK(t, e.call(t, "POST", "/pools", url.Values{"poolid": {"test-pool"}, "comment": {"Test pool"}}))
	e.mustTaskOK(t, "POST", "/nodes/pve1/qemu", url.Values{
		"vmid": {"100"}, "name": {"test-vm"}, "cores": {"2"}, "memory": {"2048"}, "sockets": {"1"},
		"ostype": {"l26"}, "boot": {"order=scsi0;ide2;net0"}, "scsi0": {"local-lvm:32"},
		"ide2": {"local:iso/debian-12.iso,media=cdrom"}, "net0": {"virtio=BC:24:11:2E:C5:4A,bridge=vmbr0"},
		"scsihw": {"virtio-scsi-pci"}, "tags": {"production;webserver"}, "pool": {"test-pool"},
	})
	mustOK(t, e.call(t, "PUT", "/pools", url.Values{"poolid": {"test-pool"}, "storage": {"local"}}))
	e.mustTaskOK(t, "POST", "/nodes/pve1/qemu", url.Values{
		"vmid": {"101"}, "name": {"matt"}, "agent": {"1"}, "scsi0": {"local-lvm:8"}, "start": {"1"},
	})
	if !slices.ContainsFunc(e.c.VMs(), func(v VM) bool { return v.VMID == 101 && v.Status == "running" }) {
		t.Fatal("VM 101 is not running")
	}
}
