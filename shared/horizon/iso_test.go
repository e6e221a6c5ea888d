package horizon_test

import (
	"strings"
	"testing"

	"github.com/google/uuid"

	"horizon/shared/horizon"
)

func TestISOReach(t *testing.T) {
	t.Parallel()
	server, other := uuid.New(), uuid.New()
	storages := []horizon.ProxmoxStorage{{Name: "local", Nodes: []string{"pve1", "pve2", "pve3"}, Path: "/var/lib/vz", Content: []string{"iso"}},
		{Name: "lvm", Nodes: []string{"pve4"}, Content: []string{"images"}},
		{Name: "nfs", Shared: true, Nodes: []string{"pve1", "pve2"}}}
	built := func(storage string) horizon.ISO {
		return horizon.ISO{Name: "noble", Kind: horizon.ISOKindCloudImage, ServerID: server, Node: "pve1", ArtifactStorage: storage,
			State: horizon.ISOBuilt, Outputs: horizon.ISOOutputs{VM: &horizon.ISOVM{VMID: 9000, Template: true}}}
	}
	failed := built("local")
	failed.State = horizon.ISOFailed
	imageOnly := built("local")
	imageOnly.Outputs.VM = nil
	installer := horizon.ISO{Name: "installer", Kind: horizon.ISOKindISO, ServerID: server, Node: "pve1", ArtifactStorage: "local",
		State: horizon.ISOBuilt, Outputs: horizon.ISOOutputs{Image: &horizon.ISOImage{VolID: "local:iso/installer.iso"}}}
	tests := []struct {
		name   string
		iso    horizon.ISO
		server uuid.UUID
		node   string
		want   string // how, or the error's key words
		ok     bool
	}{
		{"same node", built("local"), server, "pve1", "storage local of node pve1, the machine's own", true},
		{"shared storage", built("nfs"), server, "pve2", "shared storage nfs", true},
		{"a template VM on another node's storage", built("local"), server, "pve2", "clones a template to another node only from shared storage", false},
		{"an installer image on another node's storage", installer, server, "pve3", "a copy on storage local of node pve3", true},
		{"no directory storage for iso content to copy to", installer, server, "pve4", "node pve4 has no directory storage for iso content", false},
		{"another cluster", built("nfs"), other, "pve1", "another Proxmox cluster", false},
		{"not built", failed, server, "pve1", "is failed, not built", false},
		{"nothing to use yet", imageOnly, server, "pve1", "has not built what stacks use", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			how, err := tc.iso.Reach(tc.server, storages, tc.node)
			got := how
			if err != nil {
				got = err.Error()
			}
			if (err == nil) != tc.ok || !strings.Contains(got, tc.want) {
				t.Fatalf("got %q (error %v), want %q", got, err, tc.want)
			}
		})
	}
	if a, ok := built("nfs").Artifact(); !ok || a.Value != "9000" {
		t.Errorf("a cloud image's artifact is its template's VM id: %+v", a)
	}
}

func TestISOActions(t *testing.T) {
	t.Parallel()
	admin, member := horizon.Capabilities{Write: true, Admin: true}, horizon.Capabilities{Write: true}
	if got := horizon.ISOActions(horizon.ISOBuilt, false, member); len(got) != 0 {
		t.Errorf("a member may %v", got)
	}
	if got := horizon.ISOActions(horizon.ISOBuilt, true, admin); len(got) != 1 || got[0] != horizon.ActionCancel {
		t.Errorf("during a run: %v", got)
	}
	if got := horizon.ISOActions(horizon.ISOFailed, false, admin); len(got) != 3 {
		t.Errorf("a failed ISO: %v", got)
	}
	if got := horizon.ISOActions(horizon.ISORemoved, false, admin); len(got) != 0 {
		t.Errorf("a removed ISO: %v", got)
	}
}
