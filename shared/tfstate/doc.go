// Package tfstate keeps Terraform's state sealed in Postgres and serves it to Terraform and
// OpenTofu through their built-in http backend, from the worker process, on loopback only.
//
// Why not the pg backend Horizon used before: it stores state as plain JSON, sensitive outputs
// and variables included, and it creates workspaces under one database-wide lock taken without
// waiting (terraform#33217), which failed parallel destroys. Here:
//
//   - A state is one row of terraform_states, sealed with secrets.Box under a purpose that
//     names its workspace, so a state cannot be moved to another row and still open.
//   - There are no Terraform workspaces: every work dir is given its own address,
//     /states/<workspace>, and stays on Terraform's default workspace. Nothing is created,
//     selected or deleted by Terraform, so nothing races doing so.
//   - Every work dir gets its own credentials (Grant): HTTP basic auth valid for its workspace
//     only, until the work dir is closed. The listener binds 127.0.0.1.
//   - A workspace's lock is a Postgres session advisory lock, held on a connection of its own
//     for as long as Terraform holds the lock. A killed worker's connections close and its
//     locks go with them, as with the pg backend; revoking a grant releases the locks taken
//     under it, so a Terraform killed mid-run leaves none behind either.
//   - Settings reach Terraform in its environment (TF_HTTP_*), never in a file: the backend
//     block Horizon writes is empty, and .terraform keeps no credentials.
//
// MigratePG moves the states a pg backend left (installations from before this package) into
// terraform_states, sealed, and drops the pg backend's tables, at the workers' start. An
// operator who must read a state in an emergency runs `workers state show <workspace>`.
package tfstate
