// Package pve is a stand-in for Proxmox VE clusters, faithful enough that Horizon's tests and
// demo exercise their real code paths: the PVE JSON API subset Horizon uses, over HTTPS with
// API-token auth; one SSH/SFTP server per node; and one SSH server per started VM. Tests
// start it in process (Start with DefaultConfig or LoadConfig); deploy/sandbox runs it as a
// program.
//
// Decisions a newcomer would otherwise rediscover:
//
//   - Fidelity is checked, not assumed. Every route is PVE's (method and path template) and
//     declares the parameters it accepts by their schema names; the tests check both against
//     the official schema (testdata/apidata.json) and compare answers with
//     go-proxmox's recorded PVE 9 fixtures. A parameter the sandbox does not know is refused
//     with PVE's own 400 rather than ignored, so a client never relies on something the
//     sandbox only pretends to do.
//   - Wire formats are PVE's: {"data": …} envelopes; errors with the message in the status
//     line's reason phrase and in "message", plus "errors" per parameter for 400 (the
//     listener speaks HTTP/1.1 only, as pveproxy, and error answers are written on the
//     hijacked connection to get the reason phrase right); 401 and 595 without a body;
//     booleans as 0/1; UPIDs of eight colon-separated fields ending with a colon.
//   - Writes that PVE runs as workers return a UPID and finish after Config.TaskDuration.
//     Checks PVE makes before forking its worker happen at once (an existing VMID, a running
//     VM, a bad parameter); the change itself happens when the task ends (POST config, start,
//     stop, destroy, template, resize, download). A VM being created or cloned exists at once
//     with lock "create"/"clone", so its VMID is taken from the first moment, as in PVE.
//   - VMIDs are unique per cluster. /cluster/nextid answers the lowest free ID and reserves
//     nothing; callers that race must handle "VM 100 already exists".
//   - Storages hold real files: iso, vztmpl, snippets, import and backup content lives in a
//     directory per storage (one per cluster for a shared storage, one per node otherwise),
//     laid out as PVE's dir plugin does (template/iso, snippets, …). A node's SFTP maps the
//     storage's path (local → /var/lib/vz) onto that directory, so a snippet written over SFTP
//     is listed by the API. VM disks are bookkeeping only (no QEMU runs): their sizes are
//     tracked, import-from reads the source's virtual size (qcow2 header or file size).
//   - One upload at a time per node: a node's SFTP refuses a second file opened for writing
//     while one is open. PVE has no such rule; Horizon promises one build per node, and this
//     makes a broken promise visible (Node.Uploads, Node.RejectedUploads).
//   - A started VM whose ipconfig0 has ip=127.x.y.z/nn gets an SSH server on that address
//     (Config.VMSSHPort), accepting the keys its cloud-init user-data (cicustom user=…) or
//     sshkeys would install and presenting the host key from ssh_keys when given. Commands
//     run with bash in a per-VM directory. Other static addresses are refused: the sandbox
//     must never point a client at a real network.
//   - Fault knobs (latency, failing the next calls of a route, hanging tasks of a type,
//     failing downloads, node offline, host key and certificate rotation) are Go methods and
//     admin endpoints under /sandbox/ on each cluster listener.
//   - State lives in memory and, with Config.DataDir, on disk: the VM inventory
//     (inventory.json), storage contents, host keys and TLS material survive restarts.
//     Without a data directory a temporary one holds the files and Close removes it; keys
//     then live in memory, stable for the sandbox's lifetime.
//
// What PVE does that the sandbox does not is listed in deploy/sandbox/README.md.
package pve
