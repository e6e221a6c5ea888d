// Package horizon holds Horizon's domain vocabulary: the types, states and legal transitions of
// stacks, runs and steps, the validation helpers that report every field problem at once, and the
// sentinel errors the rest of the code base branches on.
//
// It does no I/O and imports nothing of ours, so both the API (functions/) and the workers
// (workers/) can share it, and so can every package under shared/.
package horizon
