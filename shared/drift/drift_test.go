package drift

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func record() Record {
	ctime := int64(1700000000)
	return Record{VMID: 100, Node: "pve1", Name: "web-0", Tags: []string{"horizon", "lab"}, Pool: "dev", Status: "running",
		Config: map[string]string{"memory": "1024", "cores": "2", "net0": "virtio=BC:24:11:00:00:01,bridge=vmbr0",
			"scsi0": "local-lvm:vm-100-disk-0,size=4G", "onboot": "1"},
		CTime: &ctime, UUID: "6f1c", Digest: "d1", MaxMem: 1 << 30, MaxCPU: 2, MaxDisk: 4 << 30, RecordedAt: time.Unix(1700000100, 0)}
}

func row() *Resource {
	return &Resource{VMID: 100, Node: "pve1", Name: "web-0", Status: "running", Tags: "horizon;lab", Pool: "dev",
		MaxMem: 1 << 30, MaxCPU: 2, MaxDisk: 4 << 30}
}

func raw() map[string]any {
	return map[string]any{"memory": "1024", "cores": 2.0, "net0": "virtio=BC:24:11:00:00:01,bridge=vmbr0",
		"scsi0": "local-lvm:vm-100-disk-0,size=4G", "onboot": 1.0, "name": "web-0", "tags": "horizon;lab",
		"smbios1": "uuid=6F1C", "meta": "creation-qemu=9.2.0,ctime=1700000000", "vmgenid": "x", "digest": "d1"}
}

func TestCompareListing(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		edit   func(*Resource) *Resource
		want   []Finding
		config bool
	}{
		{"in sync", func(r *Resource) *Resource { return r }, nil, false},
		{"missing", func(*Resource) *Resource { return nil }, []Finding{{Kind: Missing, Expected: map[string]any{"vmid": 100, "node": "pve1"}}}, false},
		{"moved", func(r *Resource) *Resource { r.Node = "pve2"; return r }, []Finding{{Path: "node", Kind: Moved, Expected: "pve1", Actual: "pve2"}}, false},
		{"stopped", func(r *Resource) *Resource { r.Status = "stopped"; return r }, []Finding{{Path: "status", Kind: Stopped, Expected: "running", Actual: "stopped"}}, false},
		{"renamed", func(r *Resource) *Resource { r.Name = "x"; return r }, []Finding{{Path: "name", Kind: Changed, Expected: "web-0", Actual: "x"}}, false},
		{"tags in another order are the same", func(r *Resource) *Resource { r.Tags = "lab;Horizon"; return r }, nil, false},
		{"retagged", func(r *Resource) *Resource { r.Tags = "lab"; return r }, []Finding{{Path: "tags", Kind: Changed, Expected: []string{"horizon", "lab"}, Actual: []string{"lab"}}}, false},
		{"out of the pool", func(r *Resource) *Resource { r.Pool = ""; return r }, []Finding{{Path: "pool", Kind: Changed, Expected: "dev", Actual: nil}}, false},
		{"locked", func(r *Resource) *Resource { r.Lock = "suspended"; return r }, []Finding{{Path: "lock", Kind: Added, Actual: "suspended"}}, false},
		{"a backup's lock is routine", func(r *Resource) *Resource { r.Lock = "backup"; return r }, nil, false},
		{"memory changed: read the config", func(r *Resource) *Resource { r.MaxMem = 2 << 30; return r }, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := CompareListing(record(), tc.edit(row()))
			if diff := cmp.Diff(tc.want, got.Findings); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
			if got.ReadConfig != tc.config || got.Unknown {
				t.Errorf("read config %v unknown %v, want %v false", got.ReadConfig, got.Unknown, tc.config)
			}
		})
	}
	if got := CompareListing(record(), &Resource{VMID: 100, Node: "pve1", Status: "unknown"}); !got.Unknown || len(got.Findings) != 0 {
		t.Errorf("a VM on an offline node: %+v, want unknown and no finding", got)
	}
}

func TestCompareConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		edit func(map[string]any)
		want []Finding
	}{
		{"in sync", func(map[string]any) {}, nil},
		{"a snapshot and a notes edit are not drift", func(m map[string]any) {
			m["parent"], m["description"], m["digest"], m["unused0"] = "before", "rebooted by Bob", "d2", "local-lvm:vm-100-disk-9"
		}, nil},
		{"memory", func(m map[string]any) { m["memory"] = "2048" }, []Finding{{Path: "memory", Kind: Changed, Expected: "1024", Actual: "2048"}}},
		{"disk size", func(m map[string]any) { m["scsi0"] = "local-lvm:vm-100-disk-0,size=8G" },
			[]Finding{{Path: "scsi0.size", Kind: Changed, Expected: "4G", Actual: "8G"}}},
		{"bridge and a firewall", func(m map[string]any) { m["net0"] = "virtio=BC:24:11:00:00:01,bridge=vmbr1,firewall=1" },
			[]Finding{{Path: "net0.bridge", Kind: Changed, Expected: "vmbr0", Actual: "vmbr1"}, {Path: "net0.firewall", Kind: Added, Actual: "1"}}},
		{"a second NIC and no onboot", func(m map[string]any) { m["net1"] = "e1000=BC:24:11:00:00:02"; delete(m, "onboot") },
			[]Finding{{Path: "net1", Kind: Added, Actual: "e1000=BC:24:11:00:00:02"}, {Path: "onboot", Kind: Removed, Expected: "1"}}},
		{"replaced", func(m map[string]any) { m["smbios1"], m["meta"], m["memory"] = "uuid=77aa", "ctime=1800000000", "4096" },
			[]Finding{{Kind: Replaced, Expected: map[string]any{"uuid": "6f1c", "ctime": int64(1700000000)}, Actual: map[string]any{"uuid": "77aa", "ctime": int64(1800000000)}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := raw()
			tc.edit(m)
			if diff := cmp.Diff(tc.want, CompareConfig(record(), m)); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAttribute(t *testing.T) {
	t.Parallel()
	f := []Finding{{Path: "node", Kind: Moved}, {Path: "tags", Kind: Changed}}
	Attribute(record(), f, []Task{
		{Type: "qmigrate", ID: "100", User: "old@pam", StartTime: 1700000000}, // before Horizon's apply
		{Type: "qmigrate", ID: "100", User: "alice@pam", StartTime: 1700000200},
		{Type: "qmigrate", ID: "101", User: "bob@pam", StartTime: 1700000300},
	})
	if f[0].ChangedBy != "alice@pam" || f[0].ChangedAt == nil || f[0].ChangedAt.Unix() != 1700000200 {
		t.Errorf("moved: by %q at %v, want alice@pam at 1700000200", f[0].ChangedBy, f[0].ChangedAt)
	}
	if f[1].ChangedBy != "" {
		t.Errorf("tags: by %q, want nobody (PVE logs no task for a synchronous edit)", f[1].ChangedBy)
	}
}

// TestUnfixed: a re-apply clears the findings it fixed and keeps, with what Horizon set
// before, those whose property still shows the drifted value.
func TestUnfixed(t *testing.T) {
	t.Parallel()
	captured := record()
	captured.Status = "running"                                  // the apply started it again: fixed
	captured.Config["scsi0"] = "local-lvm:vm-100-disk-0,size=8G" // PVE cannot shrink: still drifted
	captured.Tags = []string{"lab"}                              // the module does not write tags: still drifted
	open := []Finding{
		{Path: "status", Kind: Stopped, Expected: "running", Actual: "stopped"},
		{Path: "scsi0.size", Kind: Changed, Expected: "4G", Actual: "8G"},
		{Path: "tags", Kind: Changed, Expected: []any{"horizon", "lab"}, Actual: []any{"lab"}},
	}
	rec, keep := Unfixed(captured, open)
	if diff := cmp.Diff([]int{1, 2}, keep); diff != "" {
		t.Errorf("kept (-want +got):\n%s", diff)
	}
	if rec.Config["scsi0"] != "local-lvm:vm-100-disk-0,size=4G" || !cmp.Equal(rec.Tags, []string{"horizon", "lab"}) {
		t.Errorf("record: scsi0 %q tags %v, want what Horizon set before", rec.Config["scsi0"], rec.Tags)
	}
	now := raw()
	now["scsi0"] = "local-lvm:vm-100-disk-0,size=8G"
	if f := CompareConfig(rec, now); len(f) != 1 || f[0].Path != "scsi0.size" {
		t.Errorf("the kept record no longer finds the resize: %v", f)
	}
}
