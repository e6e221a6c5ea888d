// Package stacks serves /v1/stacks: drafts, deploys, the read models (detail, pipeline,
// outputs, history, runs) and the run controls (cancel, retry, run again).
//
// An endpoint that starts work writes the run and all its steps in the transaction that checks
// and locks the stack, then enqueues run:advance after the commit; if that enqueue is lost the
// workers' reconciler finds the run (Postgres is the truth, Redis only delivers). At most one
// run per stack is in progress (a partial unique index): a concurrent second deploy gets 409.
//
// Preflight runs inside the deploy request, before anything is queued, and reports every
// problem at once: incomplete answers, parameter values, addresses (free, in the environment's
// networks), Proxmox servers and nodes (in the environment, online — asked live), pools and
// snippet storage in the inventory, the ISO a machine picked (built, of the machine's cluster,
// on a storage its node reaches: shared or its own; checkISO), VM names already taken in the
// cluster. VM ids are
// allocated by Horizon, unique per cluster in Postgres and checked against the cluster's
// inventory, and stay with their execution.
//
// A stack pins its template version and, per job, the commit that version recorded: the commit
// whose module the version's validation inspected. "Force retry" re-resolves a failed job's
// branch, and every terraform action's (kept on the stack as a re-pin, Stack.ActionCommits,
// which an upgrade clears), through one resolver (resolveBranch).
//
// Quotas (quota.go): a deploy and a saved edit or upgrade check what they add to the team's
// usage against its quotas (shared/quota) with the preflight's other problems, then again in
// the transaction that writes the run, holding the team's quota row, so that two requests
// cannot both take the last of a quota; drafts list the problem and plans show the delta. Run
// again, retry and actions are not checked: they never add to what a stack counts.
//
// Actions (actions.go) are runs of kind action. A script action's one step runs on the machine
// the user chose. A terraform action's run makes an action instance (instances.go): its module,
// at the commit the stack pins for it (its version's, or a force retry's re-pin), applied in a workspace of its own; undoing
// it is another action run, a destroy with the code of the version that made it. A removal
// undoes every instance, newest first and one phase each, before it destroys anything else
// (removalSteps).
package stacks
