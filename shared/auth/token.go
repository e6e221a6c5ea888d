package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"strings"

	"horizon/shared/secrets"
)

// TokenPrefix starts every Horizon API token, so that secret scanners and humans recognise one;
// SetupTokenPrefix starts the one-time token that makes the first admin; SignInCodePrefix the
// one-time code a sign-in link carries instead of a token.
const (
	TokenPrefix      = "hzn_"
	SetupTokenPrefix = "hzs_"
	SignInCodePrefix = "hzc_"
)

const tokenRandomBytes = 32

var tokenEncoding = base64.RawURLEncoding

// NewToken mints a token. The caller stores only HashToken of it and shows it once.
func NewToken() secrets.Value { return newToken(TokenPrefix) }

// NewSetupToken mints a one-time setup token (see store.SetupTokenIssue).
func NewSetupToken() secrets.Value { return newToken(SetupTokenPrefix) }

// NewSignInCode mints a one-time sign-in code (see store.SignInCodeInsert).
func NewSignInCode() secrets.Value { return newToken(SignInCodePrefix) }

func newToken(prefix string) secrets.Value {
	b := make([]byte, tokenRandomBytes)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return secrets.Value(prefix + tokenEncoding.EncodeToString(b))
}

// WellFormed reports whether s has the shape of a Horizon token. It says nothing about whether
// the token exists; it lets the API reject garbage without a database round trip.
func WellFormed(s string) bool {
	rest, ok := strings.CutPrefix(s, TokenPrefix)
	if !ok || len(rest) != tokenEncoding.EncodedLen(tokenRandomBytes) {
		return false
	}
	_, err := tokenEncoding.DecodeString(rest)
	return err == nil
}

// HashToken is the value stored for, and looked up by, a token.
func HashToken(token string) []byte {
	sum := sha256.Sum256([]byte(token))
	return sum[:]
}
