// Package terraform runs a job's Terraform module for one job execution, through
// terraform-exec, with Terraform ≥ 1.5 or OpenTofu ≥ 1.6 (FindBinary).
//
// A Runner (one per worker, built from Config) prepares a Workdir per execution run:
// Prepare copies the template checkout at the pinned commit into a fresh private directory,
// adds BackendFile (the built-in http backend) and VarsFile (the values of the variables the
// module declares), and binds the directory to the execution's state. Init, Plan, Apply and
// Destroy then run Terraform there; Outputs and DeleteWorkspace read and delete the state
// without running it; Close revokes the state credentials and removes the directory.
//
// Decisions, and the facts behind them:
//
//   - State: Config.States (shared/tfstate) keeps one sealed state per execution (named like a
//     workspace, e.g. "s42-master-0") and serves it to Terraform's http backend. Terraform
//     stays on its default workspace: each work dir has its own address, so there is nothing to
//     create, select or delete, and nothing to race on. The address and the work dir's
//     credentials reach Terraform only as TF_HTTP_* in its environment: a -backend-config value
//     would be saved in .terraform in clear.
//   - The whole checkout is copied, not only the module directory, so that local module
//     sources such as "../modules/vm" resolve (HCP Terraform's "working directory" does the
//     same). A module must not declare a backend of its own, nor ship files named BackendFile
//     or VarsFile. Only declared variables are written (terraform-config-inspect reads them),
//     and a declared variable without default and without a value fails Prepare, naming it.
//   - Environment: terraform-exec's SetEnv replaces the whole environment, so Runner builds it
//     complete: an allow-list of the worker's variables (PATH, HOME, locale, proxies, TLS
//     roots, and the TF_* variables terraform-exec permits, e.g. TF_CLI_CONFIG_FILE), then
//     Config.Env and PrepareOpts.Env (e.g. the Proxmox endpoint and token), then TF_HTTP_*,
//     TF_PLUGIN_CACHE_DIR and CHECKPOINT_DISABLE. The worker's other variables
//     (HORIZON_SECRET_KEY, database URLs) never reach a module's local-exec.
//   - Output streaming: Init, Plan, Apply and Destroy stream into the caller's Sink line by
//     line; Sink calls never overlap. Show and state push run with the handle's writers
//     detached: terraform-exec copies a command's stdout into the handle's writer as well as
//     its JSON parser, and that JSON holds sensitive values in clear. terraform-exec asks the
//     version before init and show only: those run behind a version shim that answers it
//     (shim.go), every other command runs the binary itself, so that nothing but Terraform
//     starts under a node's build gate. Lines are not masked here; the Sink masks them (secrets.Masker). Error
//     strings carry Terraform's stderr and need masking too before they are stored.
//   - Plugin cache: TF_PLUGIN_CACHE_DIR is shared by every work dir on the host, and concurrent
//     inits corrupt it (terraform#31964), so Init holds an exclusive flock on
//     <cache>/.horizon-init.lock. OpenTofu ≥ 1.10 locks the cache itself; the flock is harmless.
//     Seed runs that init once per module and commit on a host, before the caller takes a
//     node's build gate; Prepare then copies the seed and Init runs nothing (seed.go).
//   - Locking: runs pass -lock-timeout=Config.LockTimeout, so a second run of one state waits
//     for the first (the backend answers 423, which Terraform retries). Locks are Postgres
//     session advisory locks held by the backend: a killed Terraform or worker leaves none.
//   - Cancellation, two stages as in Coder's provisioner: when the context of a run is done,
//     terraform-exec (v0.26, Linux) sends SIGINT — Terraform stops, saves state (a resource
//     whose provisioner was interrupted is saved tainted, so the next apply replaces it) and
//     releases the lock — and if it has not exited Config.GracePeriod later, os/exec kills it
//     (the handle's WaitDelay). terraform-exec gives a single context to a command, so the hard
//     deadline is that grace period after the graceful cancel, not a second context. The error
//     satisfies errors.Is(err, context.Canceled). terraform-exec's error for a command canceled
//     as it started has a nil cause and an Error method that panics: every error it returns
//     passes through settled (diag.go) before anything reads it. terraform-exec also sets Pdeathsig=SIGKILL:
//     a worker that exits before the grace period ends kills Terraform outright, so worker
//     shutdown must wait longer than GracePeriod.
//   - errored.tfstate: when Terraform cannot write state to the backend at the end of a run, it
//     writes it to errored.tfstate in the module directory. Apply and Destroy look for it after
//     every run and push it (terraform state push, with locking); if that fails they return an
//     *ErroredStateError, PushErroredState can be retried later, and Close keeps a work dir that
//     still holds the file.
//
// The package runs on Linux (and other Unix systems): graceful cancellation relies on SIGINT
// and the plugin cache lock on flock(2).
package terraform
