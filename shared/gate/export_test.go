package gate

// StopRenewing makes l behave like a holder whose process died: renewal stops, nothing is
// released, and the lease expires after its TTL.
func (l *Lease) StopRenewing() {
	l.once.Do(func() { close(l.stop) })
	<-l.done
}
