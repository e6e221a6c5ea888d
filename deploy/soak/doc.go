// Package soak holds Horizon's soak test (soak_test.go): the API, two workers processes and
// the Proxmox VE sandbox under a mixed workload of several teams for a duration, with random
// faults, then a check of the invariants an operator relies on and a report of how the
// processes and the stores grew.
//
// `go tool task soak DURATION=60m` runs it for an hour; plain `go test ./deploy/soak` (and so
// CI) runs it for HORIZON_SOAK_DURATION, 2 minutes by default, plus the time the last
// operations take to end.
//
// Decisions:
//
//   - The API runs in the test process (functions/apitest: app.Open, the wiring functions/main.go
//     uses) and the sandbox too (pvetest); the workers are two real processes built from
//     ./workers (workertest.Process), because a SIGKILL is only honest against a process.
//   - Faults are those that cannot hurt the other users of a shared machine: a workers process
//     SIGKILLed and restarted; every Postgres connection to the soak's own database terminated
//     (pg_terminate_backend, what a Postgres restart does to clients); a sandbox node offline;
//     a VM creation that hangs (what a hung Terraform apply looks like from Horizon) then
//     released; clients of the event and log streams that never read. Redis and Postgres
//     themselves are not restarted: they are shared with the other tests of the machine.
//   - An operation is acknowledged when the API answered 2xx with a run. The invariants are
//     checked after the workload stops and every acknowledged run had time to end: no run or
//     stack left busy; one VM in the sandbox per active execution with a VM, none orphaned;
//     every finished run's log ended (log_ends) and every line of its Redis stream is in
//     log_lines; no revealed secret in any text column of the database, any Redis key of the
//     namespace or the workers' own logs.
//   - Growth is reported, not asserted (no timed assertions): RSS, threads and open files of
//     each workers process and of the test process (which hosts the API and the sandbox), and
//     the API's goroutines, sampled every 10 s, as a least-squares slope per hour; Postgres table
//     sizes against live and dead rows; the Redis namespace's keys and memory.
package soak
