package terraform

// Abandon drops the work dir as a killed worker would: its lock goes with the process, and
// nothing else happens (no Close).
func (w *Workdir) Abandon() { w.unlock() }

// WorkRoot is where the runner makes its work dirs.
func (r *Runner) WorkRoot() string { return r.cfg.WorkRoot }

// Programs returns what the work dir's commands ran: the program of its handle for apply,
// destroy, plan and state push, and whether the version shim's handle was made (init, show).
func (w *Workdir) Programs() (program string, shim bool) {
	return w.tf.ExecPath(), w.versionedTF != nil
}
