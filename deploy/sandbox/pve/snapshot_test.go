package pve

import (
	"net/url"
	"strings"
	"testing"
)

// TestDigestCoversSnapshotsAndNotes: what drift detection relies on — a snapshot and a notes
// edit change the digest (as PVE's SHA1 of the whole config file) and no setting; a setting
// change changes it too.
func TestDigestCoversSnapshotsAndNotes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.mustTaskOK(t, "POST", "/nodes/pve1/qemu", url.Values{"vmid": {"100"}, "scsi0": {"local-lvm:4"}, "name": {"a"}, "memory": {"512"}})
	config := func() map[string]any {
		return mustOK(t, e.call(t, "GET", "/nodes/pve1/qemu/100/config", nil)).(map[string]any)
	}
	before := config()
	e.mustTaskOK(t, "POST", "/nodes/pve1/qemu/100/snapshot", url.Values{"snapname": {"before-upgrade"}, "description": {"x"}})
	snapped := config()
	if snapped["digest"] == before["digest"] || snapped["parent"] != "before-upgrade" || snapped["memory"] != before["memory"] {
		t.Fatalf("after a snapshot: digest %v (was %v), parent %v", snapped["digest"], before["digest"], snapped["parent"])
	}
	snaps := mustOK(t, e.call(t, "GET", "/nodes/pve1/qemu/100/snapshot", nil)).([]any)
	if len(snaps) != 2 || snaps[0].(map[string]any)["name"] != "before-upgrade" || snaps[1].(map[string]any)["name"] != "current" {
		t.Fatalf("snapshot list: %v", snaps)
	}
	if r := e.call(t, "POST", "/nodes/pve1/qemu/100/snapshot", url.Values{"snapname": {"before-upgrade"}}); r.status != 500 {
		t.Fatalf("a second snapshot of the same name: %d %q", r.status, r.reason)
	}
	if err := e.putConfig(t, url.Values{"description": {"rebooted by Bob"}}); err != nil {
		t.Fatal(err)
	}
	noted := config()
	if noted["digest"] == snapped["digest"] {
		t.Fatal("a notes edit left the digest unchanged")
	}
}

// TestMigrate: a qmigrate task on the source node moves the VM and its local disks; a running
// VM needs online, local disks need with-local-disks, as in PVE.
func TestMigrate(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.mustTaskOK(t, "POST", "/nodes/pve1/qemu", url.Values{"vmid": {"100"}, "scsi0": {"local-lvm:4"}})
	e.mustTaskOK(t, "POST", "/nodes/pve1/qemu/100/status/start", nil)
	if r := e.call(t, "POST", "/nodes/pve1/qemu/100/migrate", url.Values{"target": {"pve2"}}); r.status != 500 || r.reason != "can't migrate running VM without --online" {
		t.Fatalf("offline migration of a running VM: %d %q", r.status, r.reason)
	}
	if r := e.call(t, "POST", "/nodes/pve1/qemu/100/migrate", url.Values{"target": {"pve2"}, "online": {"1"}}); r.status != 500 {
		t.Fatalf("migration with a local disk: %d %q", r.status, r.reason)
	}
	tk := e.mustTaskOK(t, "POST", "/nodes/pve1/qemu/100/migrate", url.Values{"target": {"pve2"}, "online": {"1"}, "with-local-disks": {"1"}})
	if tk.Node != "pve1" || tk.Type != "qmigrate" || tk.ID != "100" {
		t.Fatalf("migration task %+v: want qmigrate of 100 on pve1", tk)
	}
	if v := e.vm(t, 100); v.Node != "pve2" || v.Status != "running" {
		t.Fatalf("after migration: %+v", v)
	}
	if r := e.call(t, "GET", "/nodes/pve1/qemu/100/config", nil); r.status != 500 {
		t.Fatalf("config on the old node: %d", r.status)
	}
	mustOK(t, e.call(t, "GET", "/nodes/pve2/qemu/100/config", nil))
}

// TestSnapshotRollbackAndDelete: a rollback, as in PVE, puts back the settings of the
// snapshot (memory, a disk's size), keeps the current notes, makes the snapshot the parent,
// stops a running VM unless start=1; a deletion hands the snapshot's parent to its children.
func TestSnapshotRollbackAndDelete(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.mustTaskOK(t, "POST", "/nodes/pve1/qemu", url.Values{"vmid": {"100"}, "scsi0": {"local-lvm:4"}, "name": {"a"}, "memory": {"512"}})
	e.mustTaskOK(t, "POST", "/nodes/pve1/qemu/100/status/start", nil)
	config := func() map[string]any {
		return mustOK(t, e.call(t, "GET", "/nodes/pve1/qemu/100/config", nil)).(map[string]any)
	}
	e.mustTaskOK(t, "POST", "/nodes/pve1/qemu/100/snapshot", url.Values{"snapname": {"first"}, "description": {"before the upgrade"}})
	if err := e.putConfig(t, url.Values{"memory": {"2048"}, "description": {"upgraded by Bob"}}); err != nil {
		t.Fatal(err)
	}
	e.mustTaskOK(t, "PUT", "/nodes/pve1/qemu/100/resize", url.Values{"disk": {"scsi0"}, "size": {"8G"}})
	e.mustTaskOK(t, "POST", "/nodes/pve1/qemu/100/snapshot", url.Values{"snapname": {"second"}})

	if r := e.call(t, "POST", "/nodes/pve1/qemu/100/snapshot/nope/rollback", nil); r.status != 500 || r.reason != "snapshot 'nope' does not exist" {
		t.Fatalf("rollback to an unknown snapshot: %d %q", r.status, r.reason)
	}
	tk := e.mustTaskOK(t, "POST", "/nodes/pve1/qemu/100/snapshot/first/rollback", nil)
	if tk.Type != "qmrollback" || tk.ID != "100" {
		t.Fatalf("rollback task %+v", tk)
	}
	c := config()
	if c["memory"] != "512" || !strings.Contains(c["scsi0"].(string), "size=4G") || c["description"] != "upgraded by Bob" ||
		c["parent"] != "first" || c["snaptime"] != nil {
		t.Fatalf("after a rollback to first: %v", c)
	}
	if v := e.vm(t, 100); v.Status != "stopped" {
		t.Fatalf("a rollback without start left the VM %s", v.Status)
	}
	e.mustTaskOK(t, "POST", "/nodes/pve1/qemu/100/snapshot/second/rollback", url.Values{"start": {"1"}})
	if c := config(); c["memory"] != "2048" || !strings.Contains(c["scsi0"].(string), "size=8G") || c["parent"] != "second" || e.vm(t, 100).Status != "running" {
		t.Fatalf("after a rollback to second with start: %v, %s", c, e.vm(t, 100).Status)
	}

	// second's parent is first: deleting first gives second no parent; deleting second then
	// leaves the config without one.
	before := config()["digest"]
	tk = e.mustTaskOK(t, "DELETE", "/nodes/pve1/qemu/100/snapshot/first", nil)
	if tk.Type != "qmdelsnapshot" {
		t.Fatalf("delete task %+v", tk)
	}
	snaps := mustOK(t, e.call(t, "GET", "/nodes/pve1/qemu/100/snapshot", nil)).([]any)
	if len(snaps) != 2 || snaps[0].(map[string]any)["name"] != "second" || snaps[0].(map[string]any)["parent"] != nil {
		t.Fatalf("after deleting first: %v", snaps)
	}
	e.mustTaskOK(t, "DELETE", "/nodes/pve1/qemu/100/snapshot/second", nil)
	if c := config(); c["parent"] != nil || c["digest"] == before || c["memory"] != "2048" {
		t.Fatalf("after deleting second: %v", c)
	}
	if r := e.call(t, "DELETE", "/nodes/pve1/qemu/100/snapshot/second", nil); r.status != 500 {
		t.Fatalf("deleting a deleted snapshot: %d %q", r.status, r.reason)
	}
}
