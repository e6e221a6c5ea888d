// Package auth owns Horizon's identities: API tokens (minting, hashing, format) and the
// Principal a request acts as, with the role rules every endpoint applies.
//
// A token is "hzn_" followed by 32 random bytes in unpadded base64url. Only its SHA-256 is
// stored, so a database dump cannot be replayed as credentials; the token itself is shown once,
// when minted. Hashing needs no salt or slow KDF because the token carries 256 bits of entropy.
package auth
