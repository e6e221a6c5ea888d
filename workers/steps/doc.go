// Package steps is the work of the step:run task: building, updating or destroying one
// execution of a stack. The attempt around it — loading, the node's gate, cancel, the log,
// finishing — is workers/attempt's.
//
// An apply of a machine job takes the node's build gate, renders the machine's cloud-init and
// uploads it to the node over SFTP (pinned host key), runs terraform apply, releases the gate
// once Terraform has exited, and then runs the job's scripts over SSH on the new machine (its
// host key pinned through cloud-init). A destroy runs the cleanup scripts, then terraform
// destroy, then deletes the execution's VM itself if Proxmox still has it (an apply cut off
// before Terraform saved its state made a VM no state records), and frees the execution's
// address and VM id.
//
// The steps of action runs are the action:run task's (Actions): a script action's runs its
// script on one machine like a job's scripts; a terraform action's applies the action's module
// in its instance's own workspace (horizon_name and horizon_tags, its answers, the Proxmox
// environment of the stack's machines' server, no node gate), keeping the variables it gave
// Terraform sealed with the instance before it runs, so that the undo — terraform destroy with
// the code of the template version that made the instance — gives the same ones.
//
// Delivery is at least once: the step's attempt number is the fencing token of every write (a
// superseded attempt's writes match no row), Terraform state and pg locks make apply and destroy
// idempotent, the module adopts a VM that already has the execution's stable VM id, and scripts
// leave a marker on the machine so that a redelivered attempt does not run them twice.
//
// Failures are sorted by the lifecycle: a busy node gate is not a failure (Asynq retries it
// soon without counting it); a transient error of ours (database, Redis) is returned for Asynq
// to retry; a failure of the work itself (Terraform, a script, Proxmox refusing) fails the step
// with the first line of its error and lets the run decide.
package steps
