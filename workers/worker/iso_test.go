package worker_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"golang.org/x/crypto/ssh"

	"horizon/deploy/sandbox/pve"
	"horizon/deploy/sandbox/pve/pvetest"
	"horizon/functions/apitest"
	"horizon/functions/apitest/labtest"
	"horizon/shared/proxmox"
	"horizon/shared/secrets"
	"horizon/shared/testkit"
)

// isoEnv is Horizon for ISO builds: the API, the workers and the sandbox registered as a
// Proxmox server, and an HTTP server offering a cloud image (a qcow2 header claiming 2 GiB).
type isoEnv struct {
	*engine
	image    []byte
	imageURL string
	prefix   string // a loopback /24 of the test's own, for static addresses
	key      string // an authorized key for the images
}

func newISOEngine(t *testing.T, o engineOpts) *isoEnv {
	t.Helper()
	e := &isoEnv{engine: &engine{t: t, Lab: &labtest.Lab{T: t}}}
	e.API = apitest.New(t, nil)
	e.Sandbox = pvetest.Start(t, func(c *pve.Config) {
		c.TaskDuration = 20 * time.Millisecond
		if o.sandbox != nil {
			o.sandbox(c)
		}
	})
	e.startWorker(o)
	srv := e.API.Do("POST", "/v1/proxmox-servers", apitest.Req{Body: e.Sandbox.Registration("demo", "lab")})
	if srv.Status != 201 {
		t.Fatalf("register the sandbox: %d %s", srv.Status, srv.Body)
	}
	e.Server = srv.Map()["id"].(string)

	e.image = make([]byte, 64<<10)
	copy(e.image, "QFI\xfb")
	binary.BigEndian.PutUint64(e.image[24:32], 2<<30)
	_, _ = rand.Read(e.image[512:])
	img := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/noble.img" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(e.image)
	}))
	t.Cleanup(img.Close)
	e.imageURL = img.URL + "/noble.img"

	e.prefix = testkit.LoopbackNet(t)
	pub, _, _ := ed25519.GenerateKey(rand.Reader)
	sshPub, _ := ssh.NewPublicKey(pub)
	e.key = strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sshPub)))
	return e
}

func (e *isoEnv) checksum() string {
	sum := sha256.Sum256(e.image)
	return hex.EncodeToString(sum[:])
}

// cloudImage is the seed's full pipeline: UEFI, TPM, a disk grown to 32G, a GPU, a static
// address, template conversion, and clones at .21, .22, … of the test's network.
func (e *isoEnv) cloudImage(vmid, clones int) map[string]any {
	var cl []any
	for i := 0; i < clones; i++ {
		cl = append(cl, map[string]any{"name": fmt.Sprintf("web-%d", i+1), "vmid": vmid + 101 + i, "ip": fmt.Sprintf("%s.%d/24", e.prefix, 21+i)})
	}
	return map[string]any{
		"source":  map[string]any{"url": e.imageURL, "checksum": e.checksum()},
		"storage": "local",
		"vm": map[string]any{"vmid": vmid, "name": "noble-template", "cores": 2, "memory_mb": 2048, "bios": "ovmf", "pre_enrolled_keys": true,
			"tpm": true, "disk": map[string]any{"storage": "local-lvm", "size_gb": 32, "ssd": true},
			"gpu":     []any{map[string]any{"device": "0000:01:00.0", "pcie": true, "primary_gpu": true}},
			"network": map[string]any{"bridge": "vmbr0", "vlan": 20}, "agent": true},
		"cloud_init": map[string]any{"user": "ubuntu", "ssh_authorized_keys": []string{e.key},
			"vendor":  map[string]any{"packages": []string{"qemu-guest-agent"}},
			"network": map[string]any{"mode": "static", "address": e.prefix + ".5/24", "gateway": e.prefix + ".1", "dns": []string{"127.0.0.53"}}},
		"clones": cl,
	}
}

// isoTemplate registers an ISO template and returns its id.
func (e *isoEnv) isoTemplate(name, kind string, spec map[string]any) string {
	e.t.Helper()
	r := e.API.Do("POST", "/v1/iso-templates", apitest.Req{Body: map[string]any{"name": name, "kind": kind, "spec": spec}})
	if r.Status != 201 {
		e.t.Fatalf("ISO template: %d %s", r.Status, r.Body)
	}
	return r.Map()["id"].(string)
}

// build starts building a template on pve1 (body adds to the request) and returns the ISO's id.
func (e *isoEnv) build(tmpl string, body map[string]any) string {
	e.t.Helper()
	req := map[string]any{"iso_template_id": tmpl, "proxmox_server_id": e.Server, "node": "pve1"}
	for k, v := range body {
		req[k] = v
	}
	r := e.API.Do("POST", "/v1/isos", apitest.Req{Body: req})
	if r.Status != 202 {
		e.t.Fatalf("build: %d %s", r.Status, r.Body)
	}
	return r.Map()["id"].(string)
}

// waitISO waits until the ISO is in state with no run in progress, and returns its detail.
func (e *isoEnv) waitISO(id, state string) map[string]any {
	e.t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		d := e.API.Do("GET", "/v1/isos/"+id, apitest.Req{}).Map()
		if d["state"] == state && d["current_run"] == nil {
			return d
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("the ISO is %v, not %s\nlast run: %v\nlog:\n%s", d["state"], state, d["last_run"], e.isoLog(id, ""))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// isoLog is the ISO's stored log (every run), as text.
func (e *isoEnv) isoLog(id, query string) string {
	e.t.Helper()
	r := e.API.Do("GET", "/v1/isos/"+id+"/logs"+query, apitest.Req{})
	if r.Status != 200 {
		e.t.Fatalf("logs: %d %s", r.Status, r.Body)
	}
	return string(r.Body)
}

// runLog follows the ISO's latest run to its end over SSE and returns the events' text: it
// holds every line, the summary included, since the end event comes after them.
func (e *isoEnv) runLog(id string) string {
	e.t.Helper()
	r := e.API.Do("GET", "/v1/isos/"+id+"/logs/stream", apitest.Req{})
	if r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/event-stream") || !strings.Contains(string(r.Body), "event: end") {
		e.t.Fatalf("log stream: %d %s %s", r.Status, r.Header.Get("Content-Type"), r.Body)
	}
	return string(r.Body)
}

// stages returns the latest run's stages as "<stage>[n]" → state.
func stages(d map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, s := range d["last_run"].(map[string]any)["stages"].([]any) {
		s := s.(map[string]any)
		name := s["stage"].(string)
		if s["clone"] != nil {
			name = fmt.Sprintf("%s[%v]", name, s["clone"])
		}
		out[name] = s
	}
	return out
}

func (e *isoEnv) vm(vmid int) *pve.VM {
	for _, v := range e.Sandbox.Cluster("demo").VMs() {
		if v.VMID == vmid {
			return &v
		}
	}
	return nil
}

// content lists a storage's volumes of one content type on pve1, through the API.
func (e *isoEnv) content(storage, kind string) []string {
	e.t.Helper()
	return e.contentOn("pve1", storage, kind)
}

// contentOn lists a storage's volumes of one content type on node, through the API.
func (e *isoEnv) contentOn(node, storage, kind string) []string {
	e.t.Helper()
	c := e.Sandbox.Cluster("demo")
	cl, err := proxmox.New(proxmox.Config{URL: c.URL(), TokenID: c.TokenID(), TokenSecret: secrets.Value(c.TokenSecret()), Fingerprint: c.CertFingerprint()})
	if err != nil {
		e.t.Fatal(err)
	}
	var items []struct {
		VolID string `json:"volid"`
	}
	if err := cl.Get(context.Background(), "/nodes/"+node+"/storage/"+storage+"/content?content="+kind, &items); err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, it := range items {
		out = append(out, it.VolID)
	}
	return out
}

// TestISOCloudImageBuildRerunAndRemoval: the seed's whole pipeline — UEFI, TPM, import and
// resize, GPU, static address, template conversion, three clones — checked in the sandbox; a
// re-run skips every stage and says why; the removal destroys what the build made.
func TestISOCloudImageBuildRerunAndRemoval(t *testing.T) {
	t.Parallel()
	e := newISOEngine(t, engineOpts{})
	tmpl := e.isoTemplate("noble", "cloud-image", e.cloudImage(9000, 3))
	id := e.build(tmpl, nil)
	d := e.waitISO(id, "built")

	st := stages(d)
	for _, name := range []string{"preflight", "image", "vm-create", "vm-configure", "template", "clones[0]", "clones[1]", "clones[2]"} {
		if st[name]["state"] != "succeeded" {
			t.Errorf("stage %s: %v", name, st[name])
		}
	}
	vm := e.vm(9000)
	if vm == nil {
		t.Fatal("no VM 9000 in the sandbox")
	}
	cfg := vm.Config
	if !vm.Template || cfg["bios"] != "ovmf" || cfg["machine"] != "q35" || !strings.Contains(cfg["efidisk0"], "pre-enrolled-keys=1") ||
		!strings.Contains(cfg["tpmstate0"], "version=v2.0") || !strings.Contains(cfg["scsi0"], "size=32G") || !strings.Contains(cfg["scsi0"], "ssd=1") ||
		cfg["hostpci0"] != "0000:01:00.0,pcie=1,x-vga=1" || !strings.Contains(cfg["net0"], "tag=20") || cfg["boot"] != "order=scsi0" ||
		!strings.Contains(cfg["ide2"], "cloudinit") || cfg["ipconfig0"] != "ip="+e.prefix+".5/24,gw="+e.prefix+".1" || cfg["nameserver"] != "127.0.0.53" {
		t.Errorf("template VM: template %v, config %v", vm.Template, cfg)
	}
	user := "user=local:snippets/horizon-iso-" + id + "-user.yaml"
	vendor := "vendor=local:snippets/horizon-iso-" + id + "-vendor.yaml"
	if cfg["cicustom"] != user+","+vendor {
		t.Errorf("cicustom %q", cfg["cicustom"])
	}
	if snippets := e.content("local", "snippets"); len(snippets) != 2 {
		t.Errorf("snippets on the node: %v", snippets)
	}
	for i := 0; i < 3; i++ {
		c := e.vm(9101 + i)
		if c == nil || c.Status != "running" || c.Name != fmt.Sprintf("web-%d", i+1) ||
			c.Config["ipconfig0"] != fmt.Sprintf("ip=%s.%d/24,gw=%s.1", e.prefix, 21+i, e.prefix) {
			t.Errorf("clone %d: %+v", i, c)
		}
	}
	outputs := d["outputs"].(map[string]any)
	if outputs["image"].(map[string]any)["volid"] != "local:import/noble.qcow2" || outputs["vm"].(map[string]any)["template"] != true ||
		len(outputs["clones"].(map[string]any)) != 3 {
		t.Errorf("outputs %v", outputs)
	}
	if a := d["artifact"].(map[string]any); a["value"] != "9000" || a["storage"] != "local-lvm" || a["shared"] != false {
		t.Errorf("artifact %v", a)
	}
	log := e.runLog(id)
	for _, want := range []string{"✓ VM id 9000 (the VM) is free in the cluster", "downloading " + e.imageURL, "Proxmox checked its sha256 checksum",
		"grew scsi0 from 2G to 32G", "uploaded the cloud-init user snippet", "converted VM 9000 to a template; verified: template: 1",
		"started clone web-3", "summary: build succeeded", "done (8):"} {
		if !strings.Contains(log, want) {
			t.Errorf("the build log lacks %q", want)
		}
	}

	// The stages that build on the node held its gate (their fence is recorded); the others not.
	rows, err := e.API.DB.Query(context.Background(), `SELECT s.job, s.fence IS NOT NULL FROM steps s JOIN runs r ON r.id = s.run_id
		WHERE r.iso_id = $1`, id)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var job string
		var fenced bool
		if err := rows.Scan(&job, &fenced); err != nil {
			t.Fatal(err)
		}
		if want := job != "preflight" && job != "image"; fenced != want {
			t.Errorf("stage %s went through the node's gate: %v, want %v", job, fenced, want)
		}
	}
	rows.Close()
	if n := e.Sandbox.Cluster("demo").Node("pve1").RejectedUploads(); n != 0 {
		t.Errorf("%d uploads to pve1 ran concurrently", n)
	}
	// ISO, run and step events were published, without a team.
	events := e.API.Redis.XRange(context.Background(), e.API.Deps.Namespace+":events", "-", "+").Val()
	var sawISO, sawStep bool
	for _, m := range events {
		ev := fmt.Sprint(m.Values["event"])
		sawISO = sawISO || strings.Contains(ev, `"type":"iso","id":"`+id+`"`) && strings.Contains(ev, `"state":"built"`)
		sawStep = sawStep || strings.Contains(ev, `"type":"step"`) && strings.Contains(ev, `"iso_id":"`+id+`"`) && strings.Contains(ev, `"job":"template"`)
	}
	if !sawISO || !sawStep {
		t.Errorf("events: ISO built %v, template step %v, among %d", sawISO, sawStep, len(events))
	}
	// The stream resumes after the Last-Event-ID it was given, with no line twice.
	var ids []string
	for _, line := range strings.Split(log, "\n") {
		if strings.HasPrefix(line, "id: ") {
			ids = append(ids, strings.TrimPrefix(line, "id: "))
		}
	}
	mid := ids[len(ids)/2]
	rest := e.API.Do("GET", "/v1/isos/"+id+"/logs/stream", apitest.Req{Headers: map[string]string{"Last-Event-ID": mid}})
	if rest.Status != 200 || strings.Contains(string(rest.Body), "id: "+mid+"\n") || !strings.Contains(string(rest.Body), "event: end") ||
		strings.Count(string(rest.Body), "event: line") != len(ids)-len(ids)/2-2 {
		t.Errorf("resume after %s: %d, %d lines of %d", mid, rest.Status, strings.Count(string(rest.Body), "event: line"), strings.Count(log, "event: line"))
	}
	// A browser opens it with an iso_logs stream token of this ISO, and with nothing else.
	viewer := e.API.Do("POST", "/v1/stream-tokens", apitest.Req{Token: e.Member, Body: map[string]any{"purpose": "iso_logs", "iso_id": id}})
	if viewer.Status != 200 {
		t.Fatalf("iso_logs token: %d %s", viewer.Status, viewer.Body)
	}
	tok := viewer.Map()["token"].(string)
	if r := e.API.Do("GET", "/v1/isos/"+id+"/logs/stream?stream_token="+tok, apitest.Req{Token: apitest.NoToken}); r.Status != 200 ||
		strings.Count(string(r.Body), "event: line") != strings.Count(log, "event: line") {
		t.Errorf("stream with an iso_logs token: %d", r.Status)
	}
	eventsTok := e.API.Do("POST", "/v1/stream-tokens", apitest.Req{Token: e.Member, Body: map[string]any{"purpose": "events"}}).Map()["token"].(string)
	if r := e.API.Do("GET", "/v1/isos/"+id+"/logs/stream?stream_token="+eventsTok, apitest.Req{Token: apitest.NoToken}); r.Status != 401 {
		t.Errorf("an events token opened the ISO's log: %d", r.Status)
	}
	if r := e.API.Do("POST", "/v1/stream-tokens", apitest.Req{Token: e.Member, Body: map[string]any{"purpose": "iso_logs", "iso_id": uuid.NewString()}}); r.Status != 422 {
		t.Errorf("an iso_logs token for what is not an ISO: %d %s", r.Status, r.Body)
	}

	// A re-run finds everything in place: every stage is skipped, and says why.
	if r := e.API.Do("POST", "/v1/isos/"+id+"/retry", apitest.Req{}); r.Status != 202 {
		t.Fatalf("re-run: %d %s", r.Status, r.Body)
	}
	d = e.waitISO(id, "built")
	st = stages(d)
	if st["preflight"]["state"] != "succeeded" {
		t.Errorf("preflight of the re-run: %v", st["preflight"])
	}
	for name, want := range map[string]string{"image": "image cached: local:import/noble.qcow2", "vm-create": "VM exists: 9000",
		"vm-configure": "already a template", "template": "already a template: 9000", "clones[1]": "clone web-2 exists: VM 9102"} {
		if st[name]["state"] != "skipped" || !strings.Contains(fmt.Sprint(st[name]["reason"]), want) {
			t.Errorf("re-run stage %s: %v, want skipped: %s", name, st[name], want)
		}
	}
	if s := d["last_run"].(map[string]any)["summary"].(map[string]any); len(s["skipped"].([]any)) != 7 || len(s["failed"].([]any)) != 0 {
		t.Errorf("re-run summary %v", s)
	}
	rerun := e.runLog(id)
	for _, want := range []string{"image cached", "VM exists", "already a template", "clone web-1 exists", "skipped (7):"} {
		if !strings.Contains(rerun, want) {
			t.Errorf("the re-run's log lacks %q", want)
		}
	}
	if strings.Contains(rerun, "downloading") || strings.Contains(rerun, "cloned VM") {
		t.Error("the re-run downloaded or cloned again")
	}

	// The log download filters by stage; history has every state change.
	if l := e.isoLog(id, "?stage=image"); !strings.Contains(l, "image cached") || strings.Contains(l, "VM exists") {
		t.Errorf("image-only log:\n%s", l)
	}
	if h := d["history"].([]any); len(h) != 4 || h[0].(map[string]any)["to"] != "built" || h[1].(map[string]any)["to"] != "building" {
		t.Errorf("history %v", h)
	}

	// Removal destroys the clones, the template, the snippets and the image.
	r := e.API.Do("DELETE", "/v1/isos/"+id, apitest.Req{})
	if r.Status != 202 || r.Map()["state"] != "removing" {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	e.waitISO(id, "removed")
	for _, v := range e.Sandbox.Cluster("demo").VMs() {
		t.Errorf("VM %d (%s) survived the removal", v.VMID, v.Name)
	}
	if left := append(e.content("local", "import"), e.content("local", "snippets")...); len(left) != 0 {
		t.Errorf("left on the storage: %v", left)
	}
	// Its VM ids are free again: the same template builds anew.
	e.waitISO(e.build(tmpl, map[string]any{"stages": map[string]any{"only": []string{"image"}}}), "built")
}

// TestISOStagesOnlyAndSkip: stages.only and stages.skip run a subset; what is left out is
// skipped with the reason.
func TestISOStagesOnlyAndSkip(t *testing.T) {
	t.Parallel()
	e := newISOEngine(t, engineOpts{})
	tmpl := e.isoTemplate("noble", "cloud-image", e.cloudImage(9200, 2))
	id := e.build(tmpl, map[string]any{"stages": map[string]any{"only": []string{"image"}}})
	d := e.waitISO(id, "built")
	st := stages(d)
	if st["preflight"]["state"] != "succeeded" || st["image"]["state"] != "succeeded" {
		t.Errorf("only image: preflight %v, image %v", st["preflight"], st["image"])
	}
	for _, name := range []string{"vm-create", "vm-configure", "template", "clones[0]"} {
		if st[name]["state"] != "skipped" || !strings.Contains(fmt.Sprint(st[name]["reason"]), "not in stages.only (image)") {
			t.Errorf("only image: %s %v", name, st[name])
		}
	}
	if len(e.Sandbox.Cluster("demo").VMs()) != 0 || d["artifact"] != nil {
		t.Errorf("only image built VMs or an artifact: %v", d["artifact"])
	}

	if r := e.API.Do("POST", "/v1/isos/"+id+"/retry", apitest.Req{Body: map[string]any{"stages": map[string]any{"skip": []string{"clones"}}}}); r.Status != 202 {
		t.Fatalf("retry skipping clones: %d %s", r.Status, r.Body)
	}
	d = e.waitISO(id, "built")
	st = stages(d)
	if st["image"]["state"] != "skipped" || st["template"]["state"] != "succeeded" || st["clones[1]"]["state"] != "skipped" ||
		!strings.Contains(fmt.Sprint(st["clones[1]"]["reason"]), "stages.skip lists clones") {
		t.Errorf("skip clones: %v", st)
	}
	if v := e.vm(9200); v == nil || !v.Template || e.vm(9301) != nil {
		t.Errorf("skip clones: template %+v, clone %+v", v, e.vm(9301))
	}
	if r := e.API.Do("POST", "/v1/isos/"+id+"/retry", apitest.Req{Body: map[string]any{"stages": map[string]any{"only": []string{"bake"}}}}); r.Status != 422 {
		t.Fatalf("unknown stage: %d %s", r.Status, r.Body)
	}
}

// TestISOChecksumMismatch: an image whose checksum is not the spec's fails the image stage
// with both digests; nothing later runs and nothing is built.
func TestISOChecksumMismatch(t *testing.T) {
	t.Parallel()
	e := newISOEngine(t, engineOpts{})
	spec := e.cloudImage(9400, 1)
	wrong := strings.Repeat("ab", 32)
	spec["source"].(map[string]any)["checksum"] = wrong
	id := e.build(e.isoTemplate("noble", "cloud-image", spec), nil)
	d := e.waitISO(id, "failed")
	st := stages(d)
	msg := fmt.Sprint(st["image"]["error"])
	if st["image"]["state"] != "failed" || !strings.Contains(msg, "expected sha256 "+wrong) || !strings.Contains(msg, "got "+e.checksum()) {
		t.Fatalf("image stage %v, want a mismatch naming expected and got", st["image"])
	}
	for _, name := range []string{"vm-create", "vm-configure", "template", "clones[0]"} {
		if st[name]["state"] != "held" {
			t.Errorf("%s ran after the mismatch: %v", name, st[name])
		}
	}
	if len(e.Sandbox.Cluster("demo").VMs()) != 0 || len(e.content("local", "import")) != 0 {
		t.Fatal("a mismatched image left a VM or a file")
	}
	if attempts := strings.Count(e.runLog(id), "downloading "+e.imageURL); attempts != 1 {
		t.Errorf("a checksum mismatch was downloaded %d times, want once", attempts)
	}
	if h := d["history"].([]any)[0].(map[string]any); h["to"] != "failed" || !strings.Contains(fmt.Sprint(h["error"]), "image: checksum mismatch") {
		t.Errorf("history %v", h)
	}
}

// TestISOImageCache: an image already on the storage is used when its checksum is right —
// known from this ISO's download, or computed over SFTP for a file another ISO put there — and
// replaced when it is not — unless another ISO built from it, which refuses the replacement;
// removing one of two ISOs that share the file keeps it.
func TestISOImageCache(t *testing.T) {
	t.Parallel()
	e := newISOEngine(t, engineOpts{})
	spec := map[string]any{"source": map[string]any{"url": e.imageURL, "checksum": e.checksum(), "file_name": "noble.iso"}, "storage": "local"}
	tmpl := e.isoTemplate("debian", "iso", spec)
	first := e.build(tmpl, map[string]any{"name": "first"})
	e.waitISO(first, "built")
	second := e.build(tmpl, map[string]any{"name": "second"})
	d := e.waitISO(second, "built")
	if img := stages(d)["image"]; img["state"] != "skipped" || img["reason"] != "image cached: local:iso/noble.iso (checksum verified)" {
		t.Fatalf("another ISO's file: %v", img)
	}
	if log := e.runLog(second); !strings.Contains(log, "verified on node pve1") || strings.Contains(log, "downloading") {
		t.Errorf("the cached file was not verified over SSH, or was downloaded again")
	}

	// A new version of the image under the same name would change what the first ISO's
	// machines boot: the rebuild is refused, naming that ISO, and the file is left alone.
	other := append([]byte("another image "), e.image...)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(other) }))
	t.Cleanup(srv.Close)
	sum := sha256.Sum256(other)
	spec["source"] = map[string]any{"url": srv.URL + "/v2.iso", "checksum": hex.EncodeToString(sum[:]), "file_name": "noble.iso"}
	if r := e.API.Do("POST", "/v1/iso-templates/"+tmpl+"/versions", apitest.Req{Body: map[string]any{"spec": spec}}); r.Status != 201 {
		t.Fatalf("version 2: %d %s", r.Status, r.Body)
	}
	if r := e.API.Do("PATCH", "/v1/isos/"+second, apitest.Req{Body: map[string]any{"version": 2}}); r.Status != 200 || r.Map()["outdated"] != true {
		t.Fatalf("edit: %d %s", r.Status, r.Body)
	}
	if r := e.API.Do("POST", "/v1/isos/"+second+"/retry", apitest.Req{}); r.Status != 202 {
		t.Fatalf("rebuild: %d %s", r.Status, r.Body)
	}
	d = e.waitISO(second, "failed")
	if img := stages(d)["image"]; img["state"] != "failed" || !strings.Contains(fmt.Sprint(img["error"]), "storage local already holds noble.iso for ISO first") {
		t.Fatalf("a file another ISO uses was not protected: %v", img)
	}
	if log := e.runLog(second); strings.Contains(log, "deleted") || strings.Contains(log, "downloading") {
		t.Fatalf("the first ISO's file was touched:\n%s", log)
	}

	// Removing the first keeps the file (the second recorded it too); with no other ISO using
	// it, the second's rebuild replaces it.
	if r := e.API.Do("DELETE", "/v1/isos/"+first, apitest.Req{}); r.Status != 202 {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	e.waitISO(first, "removed")
	if !strings.Contains(e.runLog(first), "image local:iso/noble.iso kept: ISO second uses it too") || len(e.content("local", "iso")) != 1 {
		t.Errorf("a shared image was not kept: %v", e.content("local", "iso"))
	}
	if r := e.API.Do("POST", "/v1/isos/"+second+"/retry", apitest.Req{}); r.Status != 202 {
		t.Fatalf("rebuild: %d %s", r.Status, r.Body)
	}
	d = e.waitISO(second, "built")
	if log := e.runLog(second); stages(d)["image"]["state"] != "succeeded" || !strings.Contains(log, "expected "+hex.EncodeToString(sum[:])+": replacing it") {
		t.Fatalf("the stale file was not replaced: %v\n%s", stages(d)["image"], log)
	}
}

// TestISODownloadRetried: a download that fails twice, then works; every attempt is in the log.
func TestISODownloadRetried(t *testing.T) {
	t.Parallel()
	e := newISOEngine(t, engineOpts{})
	e.Sandbox.FailDownloads(2)
	id := e.build(e.isoTemplate("debian", "iso", map[string]any{
		"source": map[string]any{"url": e.imageURL, "checksum": e.checksum(), "file_name": "noble.iso"}, "storage": "local",
	}), nil)
	d := e.waitISO(id, "built")
	log := e.runLog(id)
	for _, want := range []string{"download attempt 1/3 failed: download failed: 503 Service Unavailable; retrying in",
		"download attempt 2/3 failed", "(attempt 3/3)", "verified: local:iso/noble.iso"} {
		if !strings.Contains(log, want) {
			t.Errorf("the log lacks %q:\n%s", want, log)
		}
	}
	if a := d["artifact"].(map[string]any); a["value"] != "local:iso/noble.iso" {
		t.Errorf("artifact %v", a)
	}
}

// TestISOOneCloneFails: a clone the sandbox refuses (its address is not a loopback one) fails
// alone; the other two are made, the run ends failed, and the summary lists both outcomes.
func TestISOOneCloneFails(t *testing.T) {
	t.Parallel()
	e := newISOEngine(t, engineOpts{})
	spec := e.cloudImage(9500, 3)
	spec["clones"].([]any)[2].(map[string]any)["ip"] = "192.0.2.23/24"
	id := e.build(e.isoTemplate("noble", "cloud-image", spec), nil)
	d := e.waitISO(id, "failed")
	st := stages(d)
	if st["clones[0]"]["state"] != "succeeded" || st["clones[1]"]["state"] != "succeeded" || st["clones[2]"]["state"] != "failed" {
		t.Fatalf("clones: %v %v %v", st["clones[0]"], st["clones[1]"], st["clones[2]"])
	}
	if e.vm(9601) == nil || e.vm(9602) == nil || e.vm(9601).Status != "running" {
		t.Error("the other clones were not made")
	}
	sum := d["last_run"].(map[string]any)["summary"].(map[string]any)
	failed := fmt.Sprint(sum["failed"])
	if !strings.Contains(failed, "clones[2]: clone web-3 (VM 9603)") || !strings.Contains(failed, "192.0.2.23") ||
		!strings.Contains(fmt.Sprint(sum["done"]), "clones[0]: clone web-1") || !strings.Contains(fmt.Sprint(sum["done"]), "clones[1]: clone web-2") {
		t.Errorf("summary %v", sum)
	}
	if log := e.runLog(id); !strings.Contains(log, "summary: build failed") || !strings.Contains(log, "failed (1):") {
		t.Errorf("the log's summary is missing")
	}
}

// TestISOCancelDuringImage: a download that never ends is canceled: the run ends canceled, the
// ISO failed, and the Proxmox task is stopped.
func TestISOCancelDuringImage(t *testing.T) {
	t.Parallel()
	e := newISOEngine(t, engineOpts{})
	e.Sandbox.HangTasks("download")
	t.Cleanup(func() { e.Sandbox.ReleaseTasks("download") })
	id := e.build(e.isoTemplate("noble", "cloud-image", e.cloudImage(9700, 1)), nil)
	downloading := func() bool {
		for _, tk := range e.Sandbox.Cluster("demo").Tasks() {
			if tk.Type == "download" && tk.Status == "running" {
				return true
			}
		}
		return false
	}
	deadline := time.Now().Add(time.Minute)
	for !downloading() {
		if time.Now().After(deadline) {
			t.Fatal("the download did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if r := e.API.Do("POST", "/v1/isos/"+id+"/cancel", apitest.Req{}); r.Status != 202 || r.Map()["state"] != "canceling" {
		t.Fatalf("cancel: %d %s", r.Status, r.Body)
	}
	d := e.waitISO(id, "failed")
	st := stages(d)
	if d["last_run"].(map[string]any)["state"] != "canceled" || st["image"]["state"] != "canceled" || st["vm-create"]["state"] != "canceled" {
		t.Fatalf("after cancel: run %v, image %v, vm-create %v", d["last_run"].(map[string]any)["state"], st["image"], st["vm-create"])
	}
	var task pve.Task
	for _, tk := range e.Sandbox.Cluster("demo").Tasks() {
		if tk.Type == "download" {
			task = tk
		}
	}
	if task.Status != "stopped" || task.ExitStatus != "interrupted by signal" {
		t.Fatalf("the download task was not stopped: %+v", task)
	}
	if log := e.runLog(id); !strings.Contains(log, "stopped Proxmox task") || !strings.Contains(log, "summary: build canceled") {
		t.Errorf("the log does not say the task was stopped:\n%s", log)
	}
	if len(e.content("local", "import")) != 0 {
		t.Error("a canceled download left a file")
	}
}

// TestISOEditRebuildsOnTheNextRun: editing an ISO to a new version starts nothing, marks it
// outdated, and the next run rebuilds the VM from the new configuration.
func TestISOEditRebuildsOnTheNextRun(t *testing.T) {
	t.Parallel()
	e := newISOEngine(t, engineOpts{})
	spec := e.cloudImage(9800, 0)
	delete(spec, "clones")
	tmpl := e.isoTemplate("noble", "cloud-image", spec)
	id := e.build(tmpl, nil)
	d := e.waitISO(id, "built")
	spec["vm"].(map[string]any)["memory_mb"] = 4096
	if r := e.API.Do("POST", "/v1/iso-templates/"+tmpl+"/versions", apitest.Req{Body: map[string]any{"spec": spec}}); r.Status != 201 {
		t.Fatalf("version 2: %d %s", r.Status, r.Body)
	}
	r := e.API.Do("PATCH", "/v1/isos/"+id, apitest.Req{Body: map[string]any{"version": 2},
		Headers: map[string]string{"If-Match": fmt.Sprintf(`"%v"`, d["version"])}})
	if r.Status != 200 || r.Map()["outdated"] != true || r.Map()["state"] != "built" || r.Map()["current_run"] != nil {
		t.Fatalf("edit: %d %s", r.Status, r.Body)
	}
	if r := e.API.Do("POST", "/v1/isos/"+id+"/retry", apitest.Req{}); r.Status != 202 {
		t.Fatalf("rebuild: %d %s", r.Status, r.Body)
	}
	d = e.waitISO(id, "built")
	if d["outdated"] != false || stages(d)["vm-create"]["state"] != "succeeded" || stages(d)["image"]["state"] != "skipped" {
		t.Fatalf("after the rebuild: outdated %v, stages %v", d["outdated"], stages(d))
	}
	if v := e.vm(9800); v == nil || v.Config["memory"] != "4096" || !v.Template {
		t.Fatalf("rebuilt VM: %+v", v)
	}
	if log := e.runLog(id); !strings.Contains(log, "built from an earlier configuration of this ISO: rebuilding it") {
		t.Error("the rebuild does not say why it rebuilt")
	}
}

// TestISOAvailabilityAndProtection: a built ISO is offered to the machines of its cluster that
// reach it (a shared storage, or its own node), and a stack's preflight says why another may
// not use it — another cluster is refused at deploy (422); an ISO a stack uses cannot be
// deleted (409 naming the stack).
func TestISOAvailabilityAndProtection(t *testing.T) {
	t.Parallel()
	tmplYAML, err := os.ReadFile(filepath.Join("..", "..", "deploy", "examples", "sandbox-vm", "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	withISO := strings.Replace(string(tmplYAML), "        machine: true\n", "        machine: true\n        iso: true\n", 1)
	e := &isoEnv{engine: newEngine(t, engineOpts{override: map[string]string{"template.yaml": withISO}, sandbox: func(c *pve.Config) {
		other := pve.DefaultConfig().Clusters[0]
		other.Name, other.Nodes = "other", []pve.NodeConfig{{Name: "pve1"}}
		c.Clusters = append(c.Clusters, other)
	}})}
	r := e.API.Do("POST", "/v1/proxmox-servers", apitest.Req{Body: e.Sandbox.Registration("other", "other")})
	if r.Status != 201 {
		t.Fatalf("register the other cluster: %d %s", r.Status, r.Body)
	}
	otherServer := r.Map()["id"].(string)
	img := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("an installer")) }))
	t.Cleanup(img.Close)
	sum := sha256.Sum256([]byte("an installer"))
	tmpl := e.isoTemplate("installer", "iso", map[string]any{"source": map[string]any{"url": img.URL + "/installer.iso", "checksum": hex.EncodeToString(sum[:])}})
	local := e.build(tmpl, map[string]any{"storage": "local", "name": "on-pve1"})
	shared := e.build(tmpl, map[string]any{"storage": "shared", "name": "on-shared"})
	elsewhere := e.build(tmpl, map[string]any{"storage": "local", "name": "elsewhere", "proxmox_server_id": otherServer})
	for _, id := range []string{local, shared, elsewhere} {
		e.waitISO(id, "built")
	}

	available := func(node string) []string {
		l := e.API.Do("GET", "/v1/isos?proxmox_server_id="+e.Server+"&available_on="+node, apitest.Req{Token: e.Member}).Map()
		var names []string
		for _, it := range l["items"].([]any) {
			names = append(names, it.(map[string]any)["name"].(string))
		}
		return names
	}
	// pve1's local installer image is available on pve2 too: a build there copies it.
	if got := available("pve2"); len(got) != 2 || got[0] != "on-pve1" || got[1] != "on-shared" {
		t.Errorf("ISOs available on pve2: %v, want the shared one and pve1's (copied)", got)
	}
	if got := available("pve1"); len(got) != 2 {
		t.Errorf("ISOs available on pve1: %v, want the shared one and pve1's own", got)
	}

	draft := func(name, node, iso string) map[string]any {
		t.Helper()
		r := e.API.Do("POST", "/v1/stacks", apitest.Req{Token: e.Member, Body: map[string]any{"team_id": e.Team, "name": name,
			"environment_id": e.Env, "template_id": e.Tmpl, "template_version": 1,
			"jobs": map[string]any{"db": map[string]any{"executions": []any{e.Machine(0, map[string]any{"node": node, "iso_id": iso})}},
				"app": map[string]any{"executions": []any{e.Machine(1, nil)}}}}})
		if r.Status != 201 {
			t.Fatalf("draft %s: %d %s", name, r.Status, r.Body)
		}
		return r.Map()
	}
	isoProblem := func(d map[string]any) string {
		for _, p := range d["problems"].([]any) {
			if p := p.(map[string]any); p["field"] == "jobs.db.executions[0].iso_id" {
				return p["message"].(string)
			}
		}
		return ""
	}
	far := draft("far", "pve2", local)
	if msg := isoProblem(far); msg != "" {
		t.Errorf("an installer image on another node's local storage: %q, want it copied", msg)
	}
	near := draft("near", "pve1", local)
	if msg := isoProblem(near); msg != "" {
		t.Errorf("an ISO on the machine's own node: %q", msg)
	}
	usesShared := draft("shared", "pve2", shared)
	if msg := isoProblem(usesShared); msg != "" {
		t.Errorf("an ISO on a shared storage: %q", msg)
	}
	other := draft("other", "pve1", elsewhere)
	if msg := isoProblem(other); !strings.Contains(msg, "built on another Proxmox cluster") {
		t.Errorf("an ISO of another cluster: %q", msg)
	}
	dep := e.API.Do("POST", "/v1/stacks/"+other["id"].(string)+"/deploy", apitest.Req{Token: e.Member})
	if p := dep.Problem(); dep.Status != 422 || !contains(p.Fields(), "jobs.db.executions[0].iso_id") {
		t.Fatalf("deploy with another cluster's ISO: %d %+v", dep.Status, p)
	}

	del := e.API.Do("DELETE", "/v1/isos/"+shared, apitest.Req{})
	if p := del.Problem(); del.Status != 409 || !strings.Contains(p.Detail, "stack shared (db[0])") ||
		len(p.Stacks) != 1 || p.Stacks[0].ID != usesShared["id"] || p.Stacks[0].Name != "shared" {
		t.Fatalf("delete an ISO in use: %d %+v, want the stack named and identified", del.Status, p)
	}
	if d := e.API.Do("GET", "/v1/isos/"+shared, apitest.Req{}).Map(); d["state"] != "built" {
		t.Fatalf("a refused delete changed the ISO: %v", d["state"])
	}
	// Once no stack uses it, it goes; the image stays while another ISO of the node uses it.
	if r := e.API.Do("DELETE", "/v1/stacks/"+usesShared["id"].(string), apitest.Req{Token: e.Member}); r.Status >= 300 {
		t.Fatalf("remove the draft: %d %s", r.Status, r.Body)
	}
	if r := e.API.Do("DELETE", "/v1/isos/"+shared, apitest.Req{}); r.Status != 202 {
		t.Fatalf("delete an ISO no longer used: %d %s", r.Status, r.Body)
	}
	e.waitISO(shared, "removed")

	// The machine on pve2 gets a copy of pve1's image at its first build, verified against the
	// image's checksum; its next build reuses the copy; the ISO says where it is; removing the
	// ISO removes the copy.
	farID := far["id"].(string)
	if r := e.API.Do("POST", "/v1/stacks/"+farID+"/deploy", apitest.Req{Token: e.Member}); r.Status != 202 {
		t.Fatalf("deploy far: %d %s", r.Status, r.Body)
	}
	e.waitState(farID, "deployed", 3*time.Minute)
	log := e.logText(farID)
	for _, want := range []string{"node pve2 cannot reach storage local of node pve1; copying installer.iso to storage local",
		"copied to local:iso/installer.iso on node pve2, sha256 checksum " + hex.EncodeToString(sum[:]) + " verified"} {
		if !strings.Contains(log, want) {
			t.Fatalf("the deploy log lacks %q:\n%s", want, log)
		}
	}
	if got := e.contentOn("pve2", "local", "iso"); !slices.Contains(got, "local:iso/installer.iso") {
		t.Fatalf("pve2's local storage holds %v, want the copy", got)
	}
	copies := e.API.Do("GET", "/v1/isos/"+local, apitest.Req{}).Map()["copies"].([]any)
	if len(copies) != 1 || copies[0].(map[string]any)["node"] != "pve2" || copies[0].(map[string]any)["volid"] != "local:iso/installer.iso" {
		t.Fatalf("the ISO's copies: %v", copies)
	}
	e.runAgainAndWait(farID, "db", 0, 3*time.Minute)
	if log := e.logText(farID); !strings.Contains(log, "ISO on-pve1: using its copy local:iso/installer.iso on node pve2") {
		t.Fatalf("the second build did not reuse the copy:\n%s", log)
	}
	if r := e.API.Do("DELETE", "/v1/stacks/"+farID, apitest.Req{Token: e.Member}); r.Status != 202 {
		t.Fatalf("remove far: %d %s", r.Status, r.Body)
	}
	e.waitState(farID, "removed", 3*time.Minute)
	if r := e.API.Do("DELETE", "/v1/stacks/"+near["id"].(string), apitest.Req{Token: e.Member}); r.Status >= 300 {
		t.Fatalf("remove the draft near: %d %s", r.Status, r.Body)
	}
	if r := e.API.Do("DELETE", "/v1/isos/"+local, apitest.Req{}); r.Status != 202 {
		t.Fatalf("delete the copied ISO: %d %s", r.Status, r.Body)
	}
	e.waitISO(local, "removed")
	if got := e.contentOn("pve2", "local", "iso"); slices.Contains(got, "local:iso/installer.iso") {
		t.Fatalf("the copy outlived its ISO: %v", got)
	}
}

// TestISORebuildWithLinkedClones: a cloud-image ISO with three linked clones is edited to a new
// version and rebuilt. Its template cannot be destroyed while linked clones use its base
// volume: the rebuild destroys the clones first, rebuilds the template, and clones it again.
// The rebuild used to fail at vm-create on every retry ("still in use by linked clone").
func TestISORebuildWithLinkedClones(t *testing.T) {
	t.Parallel()
	e := newISOEngine(t, engineOpts{})
	spec := e.cloudImage(9820, 3)
	tmpl := e.isoTemplate("noble-clones", "cloud-image", spec)
	id := e.build(tmpl, nil)
	d := e.waitISO(id, "built")
	spec["vm"].(map[string]any)["memory_mb"] = 4096
	if r := e.API.Do("POST", "/v1/iso-templates/"+tmpl+"/versions", apitest.Req{Body: map[string]any{"spec": spec}}); r.Status != 201 {
		t.Fatalf("version 2: %d %s", r.Status, r.Body)
	}
	if r := e.API.Do("PATCH", "/v1/isos/"+id, apitest.Req{Body: map[string]any{"version": 2},
		Headers: map[string]string{"If-Match": fmt.Sprintf(`"%v"`, d["version"])}}); r.Status != 200 {
		t.Fatalf("edit: %d %s", r.Status, r.Body)
	}
	if r := e.API.Do("POST", "/v1/isos/"+id+"/retry", apitest.Req{}); r.Status != 202 {
		t.Fatalf("rebuild: %d %s", r.Status, r.Body)
	}
	d = e.waitISO(id, "built")
	if v := e.vm(9820); v == nil || v.Config["memory"] != "4096" || !v.Template {
		t.Fatalf("rebuilt template: %+v", v)
	}
	for i := range 3 {
		if v := e.vm(9820 + 101 + i); v == nil || v.Status != "running" || !strings.Contains(v.Config["scsi0"]+v.Config["virtio0"], "base-9820-") {
			t.Fatalf("clone %d after the rebuild: %+v, want it running, linked to the new template", i+1, v)
		}
	}
	if log := e.runLog(id); !strings.Contains(log, "to be cloned again from the rebuilt template") {
		t.Error("the rebuild does not say it destroyed the clones")
	}
	if clones, _ := d["outputs"].(map[string]any)["clones"].(map[string]any); len(clones) != 3 {
		t.Fatalf("outputs after the rebuild: %v", d["outputs"])
	}
}

// TestACorruptedSharedImageIsRepaired: an ISO's image on a shared storage is overwritten with
// zeros of the same size; a build of the same template on another node finds it corrupted and
// replaces it with the bytes the first ISO verified. It used to refuse, naming the first ISO
// as "another source" although its recorded checksum is exactly the one this build expects:
// replacing a corrupted file with what every user of it verified is a repair.
func TestACorruptedSharedImageIsRepaired(t *testing.T) {
	t.Parallel()
	e := newISOEngine(t, engineOpts{})
	spec := map[string]any{"source": map[string]any{"url": e.imageURL, "checksum": e.checksum(), "file_name": "installer.iso"}, "storage": "shared"}
	tmpl := e.isoTemplate("inst-shared", "iso", spec)
	first := e.build(tmpl, map[string]any{"name": "inst-a"})
	e.waitISO(first, "built")
	file := filepath.Join(e.Sandbox.Cluster("demo").StorageDir("shared", "pve1"), "template", "iso", "installer.iso")
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatalf("the first ISO's image: %v", err)
	}
	if err := os.WriteFile(file, make([]byte, fi.Size()), 0o644); err != nil {
		t.Fatal(err)
	}
	second := e.build(tmpl, map[string]any{"name": "inst-b", "node": "pve3"})
	d := e.waitISO(second, "built")
	if log := e.runLog(second); stages(d)["image"]["state"] != "succeeded" || !strings.Contains(log, "expected "+e.checksum()+": replacing it") {
		t.Fatalf("the corrupted image was not repaired: %v\n%s", stages(d)["image"], log)
	}
	if got, err := os.ReadFile(file); err != nil || !slices.Equal(got, e.image) {
		t.Fatalf("the image after the repair: %d bytes (%v), want the source's %d", len(got), err, len(e.image))
	}
}
