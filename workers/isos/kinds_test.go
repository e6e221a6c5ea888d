package isos_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/uuid"
	"golang.org/x/crypto/ssh"

	"horizon/deploy/sandbox/pve"
	"horizon/functions/apitest"
	"horizon/functions/apitest/labtest"
	"horizon/shared/testkit"
	"horizon/workers/worker/workertest"
)

// lab is the seed of these tests: the lab (API, the sandbox registered as a Proxmox server)
// with the workers' handlers not started, and an HTTP server offering a cloud image (a qcow2
// header claiming 2 GiB).
type lab struct {
	*labtest.Lab
	k        *workertest.Kinds
	image    []byte
	imageURL string
	prefix   string // a loopback /24 of the test's own, for static addresses
	key      string // an authorized key for the images
}

func newLab(t *testing.T) *lab {
	t.Helper()
	l, k := kindsLab(t, labtest.Options{})
	e := &lab{Lab: l, k: k, image: make([]byte, 64<<10), prefix: testkit.LoopbackNet(t)}
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
	pub, _, _ := ed25519.GenerateKey(rand.Reader)
	sshPub, _ := ssh.NewPublicKey(pub)
	e.key = strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sshPub)))
	return e
}

// spec is a cloud image's ISO template spec: the VM vmid made a template, and one clone
// (vmid+101) at .21 of the test's network.
func (l *lab) spec(vmid int) map[string]any {
	sum := sha256.Sum256(l.image)
	return map[string]any{
		"source":  map[string]any{"url": l.imageURL, "checksum": hex.EncodeToString(sum[:])},
		"storage": "local",
		"vm": map[string]any{"vmid": vmid, "name": "noble-template", "cores": 2, "memory_mb": 2048,
			"disk": map[string]any{"storage": "local-lvm", "size_gb": 8}, "network": map[string]any{"bridge": "vmbr0"}},
		"cloud_init": map[string]any{"user": "ubuntu", "ssh_authorized_keys": []string{l.key},
			"network": map[string]any{"mode": "static", "address": l.prefix + ".5/24", "gateway": l.prefix + ".1", "dns": []string{"127.0.0.53"}}},
		"clones": []any{map[string]any{"name": "web-1", "vmid": vmid + 101, "ip": l.prefix + ".21/24"}},
	}
}

// build registers an ISO template of spec, starts building it on pve1 and returns the ISO
// and its build run.
func (l *lab) build(spec map[string]any) (string, uuid.UUID) {
	l.T.Helper()
	tmpl := l.API.Do("POST", "/v1/iso-templates", apitest.Req{Body: map[string]any{"name": "noble", "kind": "cloud-image", "spec": spec}})
	if tmpl.Status != 201 {
		l.T.Fatalf("ISO template: %d %s", tmpl.Status, tmpl.Body)
	}
	r := l.API.Do("POST", "/v1/isos", apitest.Req{Body: map[string]any{"iso_template_id": tmpl.Map()["id"], "proxmox_server_id": l.Server, "node": "pve1"}})
	if r.Status != 202 {
		l.T.Fatalf("build: %d %s", r.Status, r.Body)
	}
	id := r.Map()["id"].(string)
	return id, l.latestRun(id)
}

// latestRun is the ISO's latest run.
func (l *lab) latestRun(iso string) uuid.UUID {
	l.T.Helper()
	var run uuid.UUID
	if err := l.API.DB.QueryRow(l.T.Context(), `SELECT id FROM runs WHERE iso_id = $1 ORDER BY created_at DESC, id DESC LIMIT 1`, iso).Scan(&run); err != nil {
		l.T.Fatal(err)
	}
	return run
}

// isoState is the ISO's state.
func (l *lab) isoState(iso string) string {
	l.T.Helper()
	var s string
	if err := l.API.DB.QueryRow(l.T.Context(), `SELECT state FROM isos WHERE id = $1`, iso).Scan(&s); err != nil {
		l.T.Fatal(err)
	}
	return s
}

func (l *lab) vm(vmid int) *pve.VM {
	for _, v := range l.Sandbox.Cluster("demo").VMs() {
		if v.VMID == vmid {
			return &v
		}
	}
	return nil
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
