// Package testkit gives tests real infrastructure, isolated per test: a Postgres database cloned
// from a migrated template (DB), a Redis client with a key namespace of its own (Redis), helpers
// to wait on observable conditions instead of sleeping (Eventually), golden files rewritten
// with -update (Golden), and a loopback /24 reserved across test processes for sandbox
// machines (LoopbackNet).
//
// Services come from HORIZON_TEST_DATABASE_URL and HORIZON_TEST_REDIS_URL when set, otherwise
// from the local services on their default ports. Nothing here is a mock: tests talk to the real
// servers.
package testkit
