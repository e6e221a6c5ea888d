package secrets

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
)

// KeySize is the size of HORIZON_SECRET_KEY once base64-decoded.
const KeySize = 32

const formatV1 = 1

// ErrUndecryptable: the ciphertext is corrupt, was sealed under another key, or for another
// purpose.
var ErrUndecryptable = errors.New("secret cannot be decrypted")

// Box seals and opens secrets with one AES-256-GCM key. It is safe for concurrent use.
type Box struct {
	aead  cipher.AEAD
	keyID [4]byte
}

// NewBox returns a Box for a 32-byte key.
func NewBox(key []byte) (*Box, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("secret key is %d bytes, want %d", len(key), KeySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(key)
	b := &Box{aead: aead}
	copy(b.keyID[:], sum[:4])
	return b, nil
}

// ParseKey decodes HORIZON_SECRET_KEY (standard or URL-safe base64, padded or not).
func ParseKey(s string) ([]byte, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if k, err := enc.DecodeString(s); err == nil {
			if len(k) != KeySize {
				return nil, fmt.Errorf("decodes to %d bytes, want %d", len(k), KeySize)
			}
			return k, nil
		}
	}
	return nil, errors.New("not base64")
}

// Seal encrypts plaintext for purpose. The result is safe to store.
func (b *Box) Seal(purpose string, plaintext []byte) []byte {
	out := make([]byte, 0, 1+4+b.aead.NonceSize()+len(plaintext)+b.aead.Overhead())
	out = append(out, formatV1)
	out = append(out, b.keyID[:]...)
	nonce := make([]byte, b.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	out = append(out, nonce...)
	return b.aead.Seal(out, nonce, plaintext, []byte(purpose))
}

// Open decrypts a value sealed by Seal for the same purpose. It returns ErrUndecryptable for
// anything else.
func (b *Box) Open(purpose string, sealed []byte) ([]byte, error) {
	ns := b.aead.NonceSize()
	if len(sealed) < 1+4+ns+b.aead.Overhead() || sealed[0] != formatV1 {
		return nil, ErrUndecryptable
	}
	if [4]byte(sealed[1:5]) != b.keyID {
		return nil, fmt.Errorf("%w: sealed under another key", ErrUndecryptable)
	}
	nonce := sealed[5 : 5+ns]
	pt, err := b.aead.Open(nil, nonce, sealed[5+ns:], []byte(purpose))
	if err != nil {
		return nil, ErrUndecryptable
	}
	return pt, nil
}

// SealString is Seal for a string.
func (b *Box) SealString(purpose, plaintext string) []byte { return b.Seal(purpose, []byte(plaintext)) }

// OpenString is Open returning a Value.
func (b *Box) OpenString(purpose string, sealed []byte) (Value, error) {
	pt, err := b.Open(purpose, sealed)
	return Value(pt), err
}

// Value is a secret string. It formats as [redacted] through fmt's %v and %s, slog and JSON; call
// Reveal to get the plaintext where it is really needed.
type Value string

const redacted = "[redacted]"

// Reveal returns the plaintext.
func (v Value) Reveal() string { return string(v) }

func (v Value) String() string                { return redacted }
func (v Value) GoString() string              { return redacted }
func (v Value) LogValue() slog.Value          { return slog.StringValue(redacted) }
func (v Value) MarshalJSON() ([]byte, error)  { return []byte(`"` + redacted + `"`), nil }
func (v Value) MarshalText() ([]byte, error)  { return []byte(redacted), nil }
func (v Value) Format(f fmt.State, verb rune) { _, _ = f.Write([]byte(redacted)) } // a failed write to a formatter has no one to report to
