// Package isos serves /v1/isos: building ISO templates into ISOs on a Proxmox node, with the
// treatment stacks get — state history, the live log, retry, edit, cancel — and their removal.
//
// Decisions:
//
//   - ISOs are catalogue objects, not a team's: admins build, edit, retry, cancel and delete
//     them; every authenticated user (viewers too) reads them, their logs and their history,
//     because any team's stacks may use them. Their events carry no team.
//   - An ISO build is a run of the engine (kind iso_build, runs.iso_id) whose steps are the
//     stages (shared/isotemplate.Steps); run:advance and the workers' iso:stage handler run it
//     (workers/isos). Creating an ISO writes the ISO, its VM id reservations, the run and its
//     steps in one transaction and enqueues run:advance after the commit (the reconciler
//     finds a run whose enqueue was lost). At most one run per ISO is in progress.
//   - Stages: stages.only and stages.skip select a subset, like the seed's tags; what a run does
//     not select is planned as skipped with the reason, so the pipeline and the summary show
//     it. Preflight runs unless skip names it.
//   - Retry starts a new build run: every stage runs again and skips what already exists, which
//     finishes a failed build and makes a re-run of a built one cheap. After a failed removal,
//     retry retries the removal.
//   - Edit (PATCH) changes the name, the template version or the download storage. It starts
//     nothing: the ISO becomes "outdated" when what it would build differs from what its last
//     successful build built, and the next run rebuilds (vm-create recreates a VM built from
//     an earlier configuration; a changed image is downloaded). VM ids follow the version.
//   - Delete is a removal run (kind iso_remove, 202): clones, VM, snippets and the image (kept
//     when another ISO uses the same file) are destroyed on Proxmox, then the ISO is removed —
//     kept as history, its VM ids freed. An ISO that a stack (not removed) uses cannot be
//     deleted: 409 naming the stacks.
//   - Availability: a built ISO is offered to machines of the same cluster (the same Proxmox
//     server) whose node reaches what it built: on a shared storage, or on its own node.
//     GET /v1/isos?proxmox_server_id=&available_on=<node> lists exactly those; the stacks
//     preflight checks the same and says which it is.
//   - Logs: GET …/logs downloads the stored lines (text or NDJSON) of every run of the ISO, or of
//     ?run=, filtered by ?stage= or ?clone=; GET …/logs/stream follows the latest run (or ?run=) as
//     Server-Sent Events (backfill, then live, resumable with Last-Event-ID) through
//     shared/logstream's hub, and ends with the run. An ISO run's log lines carry the ISO's id
//     where a stack's carry the stack's (log_lines.stack_id, the owner of a run's logs). The
//     small SSE writer lives here (stream.go) until the stacks' live log provides a shared one.
package isos
