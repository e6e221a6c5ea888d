// Package secrets keeps secret values secret: Box seals and opens them at rest with AES-256-GCM
// under HORIZON_SECRET_KEY, and Value is a string type that prints as [redacted] in logs and
// JSON so that one cannot leak by accident.
//
// Ciphertexts carry a format byte and a key id (the first 4 bytes of SHA-256 of the key), so a
// future key rotation can tell which key sealed a value. Every Seal binds the value to a purpose
// string (additional authenticated data, e.g. "nagios_servers.password"), so a ciphertext copied
// into another column does not open.
package secrets
