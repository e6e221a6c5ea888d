// Package isotemplate is the specification of an ISO template version — what an ISO build
// downloads and builds — with its strict parsing, defaults, validation, hash, and the build
// stages a spec gives and a run may select. It does no I/O: the API validates uploads with it,
// the workers read the stored spec back with Decode.
//
// A spec is a JSON object. Kind "iso" has a source and a target storage: the build downloads
// the installer image there. Kind "cloud-image" follows the image pipeline of
// seeds/000_18134c9a6649e547.txt: source image, VM settings (cores, memory, BIOS with an EFI
// disk for OVMF, TPM 2.0 state, the disk's bus, storage and size to grow to, GPU passthrough
// as hostpci entries, bridge and VLAN), cloud-init defaults (user, authorized keys, vendor
// data, DHCP or a static address), whether to convert the VM to a template, and clones (name,
// VM id, address).
//
// Decisions a newcomer would otherwise rediscover:
//
//   - VM ids are part of the spec, as in the seed (vm_id and each clone's id): an image build is
//     meant to produce a template at a known id. Horizon reserves them per cluster when an ISO
//     is created (the vm_ids table that stack executions use too), and the build's preflight
//     checks them against the cluster. Two ISOs of one spec cannot share a cluster.
//   - The image file name defaults to the URL's last path segment. PVE's import content refuses
//     ".img" (the extension most cloud images ship with, and which are qcow2 files), so a
//     cloud-image default ending in ".img" becomes ".qcow2"; set source.file_name otherwise.
//   - A checksum is required: the image stage's cache ("already on the storage with the right
//     checksum") and its verification depend on it.
//   - Stages (Stage) are preflight, image, vm-create, vm-configure, template and clones; kind iso
//     has only the first two, and template and clones exist only when the spec asks for them.
//     A run may select stages with Selection{Only, Skip}, like the seed's tags. Preflight runs
//     unless Skip names it, even when Only leaves it out (the seed's "always" tag): failing
//     early costs a few API calls.
//   - Hash is the SHA-256 of the canonical JSON of the spec with its defaults filled, so a spec
//     uploaded with or without its defaults hashes the same.
package isotemplate
