// Package drift says what changed on a Proxmox VM behind Horizon's back: it compares what
// Horizon set on a machine (a Record, captured after each successful apply) with what the
// cluster shows, and reports property-level findings the way CloudFormation reports drift
// (a property path, the expected and the actual value, a kind). It is pure: the worker in
// workers/drift does the calls and the writes.
//
// Decisions a newcomer would otherwise rediscover:
//
//   - Two layers, cheapest first. One GET /cluster/resources?type=vm per cluster shows every
//     VM's node, status, name, tags, pool and lock, and its maxmem/maxcpu/maxdisk: a VM missing,
//     moved, stopped, renamed, re-tagged, moved to another pool or locked is found there, and so
//     is a change of memory, cores or the boot disk's size. Only then, or when the node's task
//     log names the VM (a qmconfig or resize task), or when the rolling sweep comes to it, is
//     its config read (CompareConfig).
//   - PVE shows the config digest only in the config itself: no listing carries it. The digest
//     is the SHA1 of the whole config file — the notes (description), the parent snapshot and
//     every snapshot section included — so a snapshot or a notes edit changes it without
//     changing anything Horizon set. A changed digest therefore only says "compare"; the
//     comparison is on the keys Horizon set, and those never include description, parent,
//     lock, meta, vmgenid or smbios1 (ignoredKeys).
//   - The keys Horizon set are the config keys present right after its apply, minus those PVE
//     owns (ignoredKeys). A key present now that was not then is "added"; one gone is
//     "removed". Tags and name are compared from the listing only.
//   - Property strings (net0, scsi0, ipconfig0, startup, boot, …) are compared part by part, so
//     a resize reads "scsi0.size: 4G → 8G" and a bridge change "net0.bridge", not a whole value.
//   - A VM deleted and recreated under the same VM id is "replaced", told by meta's ctime or
//     smbios1's uuid; its settings are then not compared (it is another machine).
//   - A VM whose node is offline shows status "unknown": nothing is concluded about it, and no
//     finding is raised or cleared.
//   - Locks that PVE takes for routine work and drops by itself (backup, snapshot,
//     snapshot-delete, rollback, migrate) are not drift.
//   - A snapshot rollback (qmrollback) puts the snapshot's settings back: it is a finding only
//     for the keys Horizon set that then differ (and "stopped" when it leaves the VM off, as PVE
//     does without start=1), attributed to the rollback; its task makes the check read the
//     config at once, since a key the listing does not show may have changed.
package drift
