// Package web holds Horizon's web console, a Node project (React, Vite, TypeScript) in this
// directory, and the Go test that checks it: its type check and unit tests (Vitest), its build,
// and an end-to-end run in real Chromium (Debian's chromium, driven by playwright-core) against
// the real API, workers, Terraform and Proxmox sandbox, started in process as workers/worker's
// tests start them. The console's own code is TypeScript under src/; see README.md.
package web
