// Package auth owns Horizon's identities: API tokens (minting, hashing, format) and the
// Principal a request acts as, with the role rules every endpoint applies.
//
// A token is "hzn_" followed by 32 random bytes in unpadded base64url. Only its SHA-256 is
// stored, so a database dump cannot be replayed as credentials; the token itself is shown once,
// when minted. Hashing needs no salt or slow KDF because the token carries 256 bits of entropy.
//
// API tokens are never accepted in URLs. Browsers' EventSource cannot send headers, so the event
// streams also take a stream token ("hst_…", StreamSigner) in ?stream_token=: stateless,
// HMAC-signed under a key derived from HORIZON_SECRET_KEY, valid for at most five minutes, for
// one purpose (the events stream, or one stack's log stream), and bound to the user and API
// token that minted it. It grants nothing by itself: each use loads that API token's principal
// afresh, so revoking the API token disables its stream tokens too. It is only checked when a
// stream opens; a stream already open outlives it.
package auth
