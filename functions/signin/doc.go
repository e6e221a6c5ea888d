// Package signin serves the one-time sign-in codes that let a link sign a browser in without
// putting an API token in the URL.
//
// A link such as the one `go tool task up` prints lands in the browser's history (and its
// address-bar completion) even when what it carries is a fragment the browser never sends.
// So the link carries a code, not the token: POST /v1/sign-in-codes mints one for the caller's
// own token, and the console exchanges it at POST /v1/sign-in, which needs no bearer token,
// for that token, keeping it in sessionStorage. What stays in the history is worthless:
//   - a code is spent on first use, and two exchanges at once get the token once;
//   - it expires after CodeTTL, minutes, not the token's lifetime;
//   - only its SHA-256 is stored; the token it stands for is sealed (shared/secrets), bound to
//     that hash, so a database read alone yields neither;
//   - it travels in request bodies only, never in a URL the API sees, so no request log holds
//     it; the exchange answers no-store.
//
// The code stands for the exact token that minted it (scope, user, revocation included), rather
// than minting a new API token per sign-in: sign-ins leave no tokens behind, and revoking the
// token ends its console sessions too. An unknown, used, expired or revoked code is one 401,
// without saying which.
package signin

import "time"

// CodeTTL is how long a sign-in code can be exchanged.
const CodeTTL = 10 * time.Minute
