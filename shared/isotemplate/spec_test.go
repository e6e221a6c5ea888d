package isotemplate_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"horizon/shared/horizon"
	"horizon/shared/isotemplate"
)

const key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl test"

var sum = strings.Repeat("ab", 32)

func cloudImage(edit func(m map[string]any)) []byte {
	m := map[string]any{
		"source":  map[string]any{"url": "https://cloud.example.org/noble-server-cloudimg-amd64.img", "checksum": sum},
		"storage": "local",
		"vm": map[string]any{"vmid": 9000, "name": "noble-template", "bios": "ovmf", "tpm": true,
			"disk": map[string]any{"storage": "local-lvm", "size_gb": 32}, "gpu": []any{map[string]any{"device": "0000:01:00.0", "pcie": true}},
			"network": map[string]any{"vlan": 20}},
		"cloud_init": map[string]any{"ssh_authorized_keys": []string{key},
			"network": map[string]any{"mode": "static", "address": "10.0.0.5/24", "gateway": "10.0.0.1", "dns": []string{"10.0.0.53"}}},
		"clones": []any{map[string]any{"name": "web-1", "vmid": 9101, "ip": "10.0.0.21/24"}},
	}
	if edit != nil {
		edit(m)
	}
	b, _ := json.Marshal(m)
	return b
}

func fields(err error) []string {
	var ve *horizon.ValidationError
	if !errors.As(err, &ve) {
		return nil
	}
	var out []string
	for _, f := range ve.Fields {
		out = append(out, f.Field)
	}
	return out
}

func TestParseFillsDefaults(t *testing.T) {
	t.Parallel()
	s, err := isotemplate.Parse(horizon.ISOKindCloudImage, cloudImage(nil), "spec")
	if err != nil {
		t.Fatal(err)
	}
	if s.Source.FileName != "noble-server-cloudimg-amd64.qcow2" || s.Source.ChecksumAlgorithm != "sha256" {
		t.Errorf("source defaults: %+v", s.Source)
	}
	if s.VM.Machine != "q35" || s.VM.Cores != 2 || s.VM.Disk.Bus != "scsi" || s.VM.Network.Bridge != "vmbr0" || s.CloudInit.User != "horizon" {
		t.Errorf("vm defaults: %+v %+v", s.VM, s.CloudInit)
	}
	if !s.MakesTemplate() || !s.Clones[0].StartClone() {
		t.Error("template and clone start default to true")
	}
	// The same spec with its defaults written out hashes the same.
	again, err := isotemplate.Parse(horizon.ISOKindCloudImage, s.Canonical(), "spec")
	if err != nil || again.Hash() != s.Hash() {
		t.Fatalf("canonical form: %v, hash %s vs %s", err, again.Hash(), s.Hash())
	}
	want := []isotemplate.Stage{"preflight", "image", "vm-create", "vm-configure", "template", "clones"}
	if got := s.Stages(horizon.ISOKindCloudImage); !slices.Equal(got, want) {
		t.Errorf("stages: got %v, want %v", got, want)
	}
}

func TestParseReportsEveryProblem(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		kind horizon.ISOKind
		spec []byte
		want []string
	}{
		{"unknown field", horizon.ISOKindISO, []byte(`{"source":{"url":"https://x/a.iso","checksum":"` + sum + `"},"colour":1}`), []string{"spec"}},
		{"wrong type", horizon.ISOKindCloudImage, cloudImage(func(m map[string]any) { m["vm"].(map[string]any)["cores"] = "two" }), []string{"spec.vm.cores"}},
		{"iso with vm", horizon.ISOKindISO, cloudImage(nil), []string{"spec.clones", "spec.cloud_init", "spec.vm"}},
		{"checksum", horizon.ISOKindCloudImage, cloudImage(func(m map[string]any) {
			m["source"] = map[string]any{"url": "ftp://x/y.qcow2", "checksum": "xyz", "checksum_algorithm": "sha256"}
		}), []string{"spec.source.url", "spec.source.checksum"}},
		{"static clone without ip, duplicate vmid, bad gpu", horizon.ISOKindCloudImage, cloudImage(func(m map[string]any) {
			m["clones"] = []any{map[string]any{"name": "a", "vmid": 9000}}
			m["vm"].(map[string]any)["gpu"] = []any{map[string]any{"device": "gpu0"}}
		}), []string{"spec.clones[0].vmid", "spec.clones[0].ip", "spec.vm.gpu[0].device"}},
		{"pcie on pc", horizon.ISOKindCloudImage, cloudImage(func(m map[string]any) {
			m["vm"].(map[string]any)["machine"] = "pc"
			m["vm"].(map[string]any)["bios"] = "seabios"
		}), []string{"spec.vm.gpu[0].pcie"}},
		{"bad network", horizon.ISOKindCloudImage, cloudImage(func(m map[string]any) {
			m["cloud_init"].(map[string]any)["network"] = map[string]any{"mode": "static", "address": "10.0.0.5", "gateway": "x", "dns": []string{"one"}}
			m["clones"] = nil
		}), []string{"spec.cloud_init.network.address", "spec.cloud_init.network.gateway", "spec.cloud_init.network.dns[0]"}},
		{"vendor extra sets a key twice, or one the vendor-data sets", horizon.ISOKindCloudImage, cloudImage(func(m map[string]any) {
			m["cloud_init"].(map[string]any)["vendor"] = map[string]any{"packages": []string{"curl"}, "extra": "timezone: UTC\ntimezone: CET\n"}
		}), []string{"spec.cloud_init.vendor.extra"}},
		{"vendor extra sets packages", horizon.ISOKindCloudImage, cloudImage(func(m map[string]any) {
			m["cloud_init"].(map[string]any)["vendor"] = map[string]any{"packages": []string{"curl"}, "extra": "packages: [wget]\n"}
		}), []string{"spec.cloud_init.vendor.extra"}},
		{"no keys", horizon.ISOKindCloudImage, cloudImage(func(m map[string]any) {
			m["cloud_init"].(map[string]any)["ssh_authorized_keys"] = []string{"not a key"}
		}), []string{"spec.cloud_init.ssh_authorized_keys[0]"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := isotemplate.Parse(tc.kind, tc.spec, "spec")
			got := fields(err)
			for _, w := range tc.want {
				if !slices.Contains(got, w) {
					t.Errorf("problems %v lack %s (error: %v)", got, w, err)
				}
			}
		})
	}
}

func TestSelection(t *testing.T) {
	t.Parallel()
	s, err := isotemplate.Parse(horizon.ISOKindCloudImage, cloudImage(nil), "spec")
	if err != nil {
		t.Fatal(err)
	}
	iso := horizon.ISO{Node: "pve1"}
	steps := isotemplate.Steps(s, horizon.ISOKindCloudImage, isotemplate.Selection{Only: []string{"image"}}, iso)
	var ran []string
	for _, st := range steps {
		if st.State != horizon.StepSkipped {
			ran = append(ran, st.Job)
		}
	}
	if !slices.Equal(ran, []string{"preflight", "image"}) {
		t.Errorf("only image runs %v, want preflight and image", ran)
	}
	steps = isotemplate.Steps(s, horizon.ISOKindCloudImage, isotemplate.Selection{Skip: []string{"clones"}}, iso)
	last := steps[len(steps)-1]
	if last.Job != "clones" || last.State != horizon.StepSkipped || last.Node == nil || *last.Node != "pve1" {
		t.Errorf("skip clones: last step %+v", last)
	}
	var p horizon.Problems
	isotemplate.Selection{Only: []string{"bake"}}.Check(&p, "stages", s.Stages(horizon.ISOKindISO))
	if got := fields(p.Err()); !slices.Equal(got, []string{"stages.only[0]"}) {
		t.Errorf("unknown stage: %v", got)
	}
}
