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
//   - The soak starts a Postgres and a Redis of its own (testkit.StartPostgres,
//     testkit.StartRedis, configured as deploy/README.md says production's are), so that it can
//     restart them for real. Faults, one every 10–25 s, the kinds in a shuffled round so that each
//     comes as often as the others (a workers crash twice as often): a workers process
//     SIGKILLed and restarted; Postgres restarted (pg_ctl -m fast) or crashed and restarted
//     (-m immediate: recovery from the WAL); Redis SIGKILLed (what appendfsync everysec had not
//     synced is lost) and started 1–5 s later, or shut down (SIGTERM) and started again; a
//     sandbox node offline; a VM creation that hangs (what a hung Terraform apply looks like
//     from Horizon) then released; clients of the event streams that never read.
//   - Beside the teams, an admin builds an ISO (an installer image served by the test), removes
//     it, and again. Every acknowledged run's log is followed over SSE to its end event, as the
//     console does (reconnecting with Last-Event-ID after a broken connection or a lagging
//     event); then the lines seen live must have increasing ids and all be in the stored log
//     (the download), in the same order (by text: a line whose XADD answer was lost is stored
//     under a fallback id, shared/logstream); a stored line never sent live is a finding unless
//     the writer's notice said so, or the end event's unstreamed count did (the follower then
//     re-reads the download, as the console does, and checks that), or Redis crashed during
//     the follow (lines Redis acknowledged and lost are in Postgres only, by design). A removed
//     stack's logs are deleted with it.
//   - An operation is acknowledged when the API answered 2xx with a run. The invariants are
//     checked after the workload stops and every acknowledged run had time to end: no run or
//     stack left busy; one VM in the sandbox per active execution with a VM, none orphaned;
//     every finished run's log ended (log_ends) and every line of its Redis stream is in
//     log_lines; no revealed secret in any text column of the database, any Redis key of the
//     namespace or the workers' own logs.
//   - Growth is reported, not asserted (no timed assertions): RSS, threads and open files of
//     each workers process and of the test process (which hosts the API and the sandbox), and
//     the API's goroutines, the soak database's size and the soak Redis's memory and keys,
//     sampled every 10 s, as a least-squares slope per hour; Postgres table sizes against rows
//     counted at the end; the Redis namespace's keys and memory.
package soak
