// Package sshx is Horizon's SSH and SFTP client: it uploads cloud-init snippets to Proxmox nodes
// and runs job scripts on the machines Horizon builds.
//
// Decisions a newcomer would otherwise rediscover:
//
//   - Host keys are always pinned. Config.HostKey carries the expected SHA-256 fingerprint, in the
//     form ssh.FingerprintSHA256 prints ("SHA256:…"); an empty or malformed pin is a validation
//     error, never "trust whatever answers". The check runs during key exchange, before user
//     authentication, so a mismatch (*HostKeyError) sends no credentials and no data. The only way
//     to learn a key is ScanHostKey, which an admin calls explicitly ("trust on first use" as a
//     deliberate act, recorded in the catalogue).
//   - A server with several host keys presents the one the client's algorithm preference picks.
//     Store the scanned key's type with its fingerprint and set Config.HostKeyType: Dial then asks
//     for that key type only, so neither a server with several keys nor a change of x/crypto's
//     default preference makes it present a different (unpinned) key.
//   - Every step that can hang has a bound: the TCP dial (DialTimeout and ctx), the SSH handshake
//     including authentication (HandshakeTimeout and ctx: a server that accepts TCP and never
//     speaks SSH fails after HandshakeTimeout), and a live connection (keepalive@openssh.com
//     every KeepaliveInterval; KeepaliveCountMax intervals without an answer close the connection,
//     so every operation on it fails instead of waiting for TCP to notice).
//   - Upload writes to a temporary file next to the target (".<name>.horizon-<random>"), sets its
//     mode before writing any byte, fsyncs when the server offers fsync@openssh.com, and renames
//     it over the target: with posix-rename@openssh.com when offered (atomic replace), otherwise
//     remove-then-rename (a reader may briefly see no file, never a partial one). Directories are
//     created only by an explicit MkdirAll. A failed or cancelled upload removes its temporary file
//     on a best-effort basis.
//   - Each SFTP operation opens its own SFTP session on the shared connection and closes it when
//     ctx is done, because pkg/sftp calls take no context; cancelling aborts in-flight requests.
//   - Run streams stdout and stderr to the caller's writers as data arrives, passes environment
//     variables with "env" requests (OpenSSH accepts only names listed in sshd's AcceptEnv, so the
//     machines' cloud-init must list Horizon's names; a refused name fails Run and the error names
//     the variable, never its value), and on cancellation sends TERM, then KILL after
//     RunOpts.KillGrace, closes the session and returns ctx.Err() without waiting for a remote that
//     ignores both. OpenSSH delivers the signal to the command's process only (not its children),
//     so scripts that start long-lived children should exec them or trap and forward signals.
//   - Errors name the address or remote path and never contain commands, environment values or
//     file contents: those may be secrets.
package sshx
