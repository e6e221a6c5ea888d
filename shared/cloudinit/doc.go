// Package cloudinit renders the cloud-init documents Horizon hands to a Proxmox VM: the
// user-data of a machine (RenderUserData), the user-data and optional vendor-data of image
// builds (RenderImageUserData, RenderVendorData), the pinned SSH host key they carry
// (NewHostKey), and the names under which the documents are stored as snippets (SnippetName,
// VolumeID).
//
// Decisions a newcomer would otherwise rediscover:
//
//   - Documents are built as Go values and written by a YAML encoder, never by string
//     templating: a hostname such as "yes", "null" or "1e3" would otherwise turn into a boolean,
//     a null or a number, and a key comment holding ": " or "#" would break the document. Output
//     is deterministic (fixed field order, no maps with random order), so golden files and
//     "applied config hash" comparisons are stable.
//   - The network is not in user-data. Proxmox writes the NoCloud network-config itself from the
//     VM's ipconfig0/nameserver/searchdomain options, and cloud-init reads network configuration
//     only from the datasource's network-config, never from user-data; Horizon sets ipconfig0
//     through the module (horizon_address) so that Proxmox's view of the address and the guest's
//     agree. Custom user-data replaces only the user part (cicustom "user=<volume>").
//   - Host keys are pinned. Horizon generates an ed25519 host key per execution and passes it in
//     ssh_keys; when ssh_keys is present cloud-init writes those keys and generates none, so the
//     key Horizon verifies when scripts connect is the only host key the VM has. The rendered
//     user-data therefore contains a private key: treat it as a secret (upload it over SFTP, never
//     log it).
//   - One login user (Machine.User, DefaultUser when empty) receives the user's chosen public key
//     and Horizon's deploy key, with passwordless sudo and a locked password; password SSH login
//     and root login are disabled. Listing users replaces the image's default user, so the user
//     scripts connect as does not depend on the distribution.
//   - Node Exporter, when asked for, is installed from the distribution's package
//     (NodeExporterPackage, "prometheus-node-exporter" on Debian and Ubuntu) and enabled with
//     systemctl; it listens on :9100. Images of other families need an image that ships it or
//     vendor-data that installs it.
package cloudinit
