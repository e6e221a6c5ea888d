// Package proxmox is Horizon's client of the Proxmox VE API, on top of
// github.com/luthermonson/go-proxmox (pinned at v0.10.0: earlier versions return nil from
// Task.Wait for a failed task).
//
// Decisions a newcomer would otherwise rediscover:
//
//   - TLS is always verified: against a configured CA, or — for the self-signed certificates a
//     fresh PVE install has — against a pinned SHA-256 fingerprint of the leaf certificate,
//     compared during the handshake, before any request (and the API token) is sent. There is no
//     way to turn verification off.
//   - Every request has a timeout. Transient failures are retried with jittered exponential
//     backoff: connection failures before the request was sent, timeouts of idempotent requests,
//     502/503/504, and 500s whose message says a lock or an operation timed out ("can't lock file
//     … got timeout"), which PVE raises before doing anything. Other errors are not retried: a
//     PVE 500 is usually a real refusal ("VM 100 already exists").
//   - Errors are classified for callers (errors.Is): ErrAuth, ErrPermission, ErrNotFound, ErrOffline, ErrBusy,
//     ErrConflict, ErrTLS, ErrUnreachable, ErrTaskFailed. An *Error carries the HTTP status and
//     PVE's message.
//   - go-proxmox's VM config type has no "startup" field, so configs are read raw (Config).
package proxmox
