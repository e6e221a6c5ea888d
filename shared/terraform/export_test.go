package terraform

// Abandon drops the work dir as a killed worker would: its lock goes with the process, and
// nothing else happens (no Close).
func (w *Workdir) Abandon() { w.unlock() }

// WorkRoot is where the runner makes its work dirs.
func (r *Runner) WorkRoot() string { return r.cfg.WorkRoot }
