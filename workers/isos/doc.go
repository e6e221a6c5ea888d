// Package isos holds the iso:stage task: one attempt of one step of an ISO run — a build stage
// (preflight, image, vm-create, vm-configure, template), one clone, or the removal.
//
// An ISO build is a run of the engine like a stack's deploy: the API writes the run and one
// step per stage, run:advance queues them phase by phase (each stage is a phase, so a failure
// holds the later ones; the clones share one phase, so one failing does not stop the others),
// and each step runs through the attempt lifecycle step:run uses (workers/attempt): the attempt
// fences every write, the node's build gate serialises the stages that build on the node
// (vm-create, vm-configure, template, clones, removal) with the machine builds of stacks, the
// step's log goes through logstream, state changes through events, and a cancel (Redis and the
// heartbeat) interrupts the stage — a Proxmox task it waits on is stopped. This package is
// only the stages' work.
//
// Every stage is idempotent and says so when it has nothing to do: it looks at what exists
// first and finishes "skipped" with the reason ("image cached", "VM exists", "already a
// template", "clone web-1 exists"). A VM is recognised as the ISO's own by a marker in its
// description ("horizon-iso: <id>", "horizon-config: <hash>"): a VM id taken by anything else
// fails the preflight with what holds it, and a VM the ISO built from an earlier configuration
// (the ISO was edited since) is rebuilt by vm-create. Clones are never rebuilt: they may be in
// use; one made from an earlier configuration is reported and left alone.
//
// The image stage keeps the seed's cache: an image already on the storage under the spec's file
// name is used if its checksum is right — known from the download that put it there (size and
// ctime still match), or computed by reading it over SFTP from the node (pinned host key) — and
// replaced otherwise. A download is a Proxmox download-url task with the checksum, so Proxmox
// verifies it; a checksum mismatch fails at once (expected vs got), other failures are retried
// with exponential backoff (Handler.DownloadAttempts, Handler.DownloadBackoff), every attempt in
// the log; the volume is then looked up on the storage to verify it is there.
//
// Failures are sorted by the lifecycle: a busy node gate is not a failure; an error of ours
// (Postgres, Redis) is returned for Asynq to retry; a refusal or failure of Proxmox, SSH or the
// spec fails the step with its first line, which the run's summary repeats.
package isos
