// Package secrets keeps secret values secret: Box seals and opens them at rest with AES-256-GCM
// under HORIZON_SECRET_KEY, Value is a string type that prints as [redacted] in logs and JSON so
// that one cannot leak by accident, and Masker removes secret values from text — log lines,
// Terraform and script output, error strings — before it leaves the worker.
//
// Ciphertexts carry a format byte and a key id (the first 4 bytes of SHA-256 of the key), so a
// future key rotation can tell which key sealed a value. Every Seal binds the value to a purpose
// string (additional authenticated data, e.g. "nagios_servers.password"), so a ciphertext copied
// into another column does not open.
//
// Masking decisions: a Masker matches each value in its common encodings (base64 in both
// alphabets, padded or not and at any alignment inside a longer base64 string, hex, URL and JSON
// escaping) and each line of a multi-line value separately, because programs print secrets
// transformed (GitHub Actions redacts the same way: actions/toolkit#1427). Values under
// MinSecretLength bytes are not masked. Overlapping matches are merged into one [masked], so no
// fragment of either secret remains. Matching scans each byte once against a two-byte prefix
// table, which keeps masking in the millions of lines per second (BenchmarkMask); Add publishes
// a new immutable table, so Mask takes no lock. Text too long to hold whole is cut where no
// match crosses (SafeCut), so that masking the pieces apart hides what masking the whole would.
package secrets
