package isotemplates_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"horizon/functions/apitest"
	"horizon/shared/auth"
)

const key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl ana@laptop"

var sum = strings.Repeat("0123456789abcdef", 4)

func cloudImage() map[string]any {
	return map[string]any{
		"source":  map[string]any{"url": "https://images.example.org/noble-server-cloudimg-amd64.img", "checksum": sum},
		"storage": "local",
		"vm": map[string]any{"vmid": 9000, "name": "noble", "bios": "ovmf", "tpm": true, "disk": map[string]any{"storage": "local-lvm", "size_gb": 32},
			"network": map[string]any{}},
		"cloud_init": map[string]any{"ssh_authorized_keys": []string{key}},
		"clones":     []any{map[string]any{"name": "web-1", "vmid": 9101}},
	}
}

func TestISOTemplatesVersionsAndReaders(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, nil)
	r := s.Do("POST", "/v1/iso-templates", apitest.Req{Body: map[string]any{"name": "noble", "kind": "cloud-image", "spec": cloudImage()}})
	if r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	created := r.Map()
	id := created["id"].(string)
	if created["kind"] != "cloud-image" || created["latest_version"] != 1.0 || r.Header.Get("Location") != "/v1/iso-templates/"+id {
		t.Fatalf("created %s", r.Body)
	}
	_, viewer := s.NewUser(auth.RoleViewer)
	if g := s.Do("GET", "/v1/iso-templates/"+id, apitest.Req{Token: viewer}); g.Status != 200 || !reflect.DeepEqual(g.Map(), created) {
		t.Fatalf("GET as a viewer: %d %s", g.Status, g.Body)
	}
	v := s.Do("GET", "/v1/iso-templates/"+id+"/versions/1", apitest.Req{Token: viewer}).Map()
	spec := v["spec"].(map[string]any)
	if spec["source"].(map[string]any)["file_name"] != "noble-server-cloudimg-amd64.qcow2" || spec["vm"].(map[string]any)["machine"] != "q35" ||
		spec["template"] != true {
		t.Errorf("stored spec lacks its defaults: %v", spec)
	}
	stages := []string{}
	for _, s := range v["stages"].([]any) {
		stages = append(stages, s.(string))
	}
	if !slices.Equal(stages, []string{"preflight", "image", "vm-create", "vm-configure", "template", "clones"}) {
		t.Errorf("stages %v", stages)
	}

	// A new version keeps the kind; the old one is untouched.
	next := cloudImage()
	next["clones"] = nil
	if r := s.Do("POST", "/v1/iso-templates/"+id+"/versions", apitest.Req{Body: map[string]any{"spec": next},
		Headers: map[string]string{"If-Match": `"1"`}}); r.Status != 201 || r.Map()["number"] != 2.0 {
		t.Fatalf("version 2: %d %s", r.Status, r.Body)
	}
	if r := s.Do("POST", "/v1/iso-templates/"+id+"/versions", apitest.Req{Body: map[string]any{"spec": next},
		Headers: map[string]string{"If-Match": `"1"`}}); r.Status != 412 {
		t.Fatalf("stale If-Match: %d %s", r.Status, r.Body)
	}
	if r := s.Do("PATCH", "/v1/iso-templates/"+id, apitest.Req{Body: map[string]any{"active": false}}); r.Status != 200 || r.Map()["active"] != false {
		t.Fatalf("deactivate: %d %s", r.Status, r.Body)
	}
	if l := s.Do("GET", "/v1/iso-templates?kind=cloud-image&active=false", apitest.Req{Token: viewer}); len(l.Map()["items"].([]any)) != 1 {
		t.Fatalf("list: %s", l.Body)
	}

	before := s.State()
	if r := s.Do("POST", "/v1/iso-templates", apitest.Req{Token: viewer, Body: map[string]any{"name": "x", "kind": "iso", "spec": cloudImage()}}); r.Status != 403 {
		t.Fatalf("a viewer created an ISO template: %d", r.Status)
	}
	if r := s.Do("POST", "/v1/iso-templates", apitest.Req{Body: map[string]any{"name": "noble", "kind": "cloud-image", "spec": cloudImage()}}); r.Status != 409 {
		t.Fatalf("a taken name: %d %s", r.Status, r.Body)
	}
	if after := s.State(); after != before {
		t.Fatalf("refused requests changed the database")
	}
}

func TestISOTemplateValidation(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, nil)
	bad := cloudImage()
	bad["source"] = map[string]any{"url": "file:///etc/passwd", "checksum": "nope"}
	bad["vm"].(map[string]any)["gpu"] = []any{map[string]any{"device": "the big one"}}
	bad["vm"].(map[string]any)["network"] = map[string]any{"vlan": 5000}
	bad["cloud_init"] = map[string]any{"ssh_authorized_keys": []string{}, "network": map[string]any{"mode": "static", "address": "10.0.0.300/24"}}
	bad["clones"] = []any{map[string]any{"name": "web 1", "vmid": 9000}}
	before := s.State()
	r := s.Do("POST", "/v1/iso-templates", apitest.Req{Body: map[string]any{"name": " ", "kind": "cloud-image", "spec": bad}})
	if r.Status != 422 {
		t.Fatalf("got %d %s, want 422", r.Status, r.Body)
	}
	got := r.Problem().Fields()
	for _, want := range []string{"name", "spec.source.url", "spec.source.checksum", "spec.vm.gpu[0].device", "spec.vm.network.vlan",
		"spec.cloud_init.ssh_authorized_keys", "spec.cloud_init.network.address", "spec.cloud_init.network.gateway",
		"spec.clones[0].name", "spec.clones[0].vmid", "spec.clones[0].ip"} {
		if !slices.Contains(got, want) {
			t.Errorf("problems %v lack %s", got, want)
		}
	}
	for _, tc := range []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"kind", map[string]any{"name": "a", "kind": "floppy", "spec": cloudImage()}, "kind"},
		{"iso with a vm", map[string]any{"name": "a", "kind": "iso", "spec": cloudImage()}, "spec.vm"},
		{"no spec", map[string]any{"name": "a", "kind": "iso"}, "spec"},
		{"unknown field", map[string]any{"name": "a", "kind": "iso", "spec": map[string]any{"source": map[string]any{"url": "https://x/a.iso", "checksum": sum}, "colour": "red"}}, "spec"},
	} {
		r := s.Do("POST", "/v1/iso-templates", apitest.Req{Body: tc.body})
		if r.Status != 422 || !slices.Contains(r.Problem().Fields(), tc.field) {
			t.Errorf("%s: got %d %s, want 422 on %s", tc.name, r.Status, r.Body, tc.field)
		}
	}
	if after := s.State(); after != before {
		t.Fatalf("refused requests changed the database")
	}
}
