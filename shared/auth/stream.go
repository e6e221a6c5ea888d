package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
)

// StreamTokenPrefix starts every stream token, so that one is never mistaken for an API token
// (which WellFormed would refuse anyway).
const StreamTokenPrefix = "hst_"

// MaxStreamTokenTTL bounds a stream token's life: it travels in a URL, where proxies and
// browser histories may keep it.
const MaxStreamTokenTTL = 5 * time.Minute

// StreamPurpose is the one thing a stream token may open.
type StreamPurpose string

// The stream purposes: the events stream (GET /v1/events), one stack's log stream
// (GET /v1/stacks/{id}/logs/stream) and one ISO's (GET /v1/isos/{id}/logs/stream).
const (
	StreamEvents  StreamPurpose = "events"
	StreamLogs    StreamPurpose = "logs"
	StreamISOLogs StreamPurpose = "iso_logs"
)

// Valid reports whether p is a known purpose.
func (p StreamPurpose) Valid() bool { return purposeCodes[p] != 0 }

// HasObject reports whether tokens of the purpose open the stream of one object (a stack's or
// an ISO's log), named by StreamClaims.Object.
func (p StreamPurpose) HasObject() bool { return p == StreamLogs || p == StreamISOLogs }

var (
	// ErrStreamTokenInvalid: the token is not one this installation signed, or was altered.
	ErrStreamTokenInvalid = errors.New("stream token invalid")
	// ErrStreamTokenExpired: the token was signed here but its time is up.
	ErrStreamTokenExpired = errors.New("stream token expired")
)

// StreamClaims is what a stream token says: who may open which stream until when. It names the
// API token it was minted with, so that revoking that token (or its user losing access) also
// ends what the stream token may open: the holder's principal is loaded afresh on every use.
type StreamClaims struct {
	Purpose StreamPurpose
	UserID  uuid.UUID
	TokenID uuid.UUID
	// Object is the stack (StreamLogs) or ISO (StreamISOLogs) whose log the token opens;
	// uuid.Nil for StreamEvents.
	Object  uuid.UUID
	Expires time.Time
}

// StreamSigner signs and verifies stream tokens with HMAC-SHA256 under a key derived from
// HORIZON_SECRET_KEY, so every API replica accepts what any other signed, and nothing but the
// secret key is needed. It is safe for concurrent use.
type StreamSigner struct {
	key []byte
}

// streamKeyLabel separates the stream-token key from every other use of HORIZON_SECRET_KEY: the
// signing key is HMAC-SHA256(secret key, label), never the secret key itself.
const streamKeyLabel = "horizon stream-token v1"

// NewStreamSigner returns a signer keyed from secretKey (HORIZON_SECRET_KEY, 32 bytes).
func NewStreamSigner(secretKey []byte) (*StreamSigner, error) {
	if len(secretKey) < 32 {
		return nil, fmt.Errorf("stream token key: secret key is %d bytes, want 32", len(secretKey))
	}
	m := hmac.New(sha256.New, secretKey)
	m.Write([]byte(streamKeyLabel))
	return &StreamSigner{key: m.Sum(nil)}, nil
}

// payload layout: version, purpose, user, token, object, expiry (Unix seconds, big endian).
const (
	streamVersion    = 1
	streamPayloadLen = 1 + 1 + 16 + 16 + 16 + 8
)

var purposeCodes = map[StreamPurpose]byte{StreamEvents: 1, StreamLogs: 2, StreamISOLogs: 3}

// Sign returns the token for c. It panics on an unknown purpose, a programmer error.
func (s *StreamSigner) Sign(c StreamClaims) string {
	code, ok := purposeCodes[c.Purpose]
	if !ok {
		panic(fmt.Sprintf("auth: stream token purpose %q", c.Purpose))
	}
	b := make([]byte, 0, streamPayloadLen+sha256.Size)
	b = append(b, streamVersion, code)
	b = append(b, c.UserID[:]...)
	b = append(b, c.TokenID[:]...)
	b = append(b, c.Object[:]...)
	b = binary.BigEndian.AppendUint64(b, uint64(c.Expires.Unix()))
	b = append(b, s.mac(b)...)
	return StreamTokenPrefix + tokenEncoding.EncodeToString(b)
}

// Verify returns the claims of token if this installation signed it and it has not expired at
// now; otherwise ErrStreamTokenInvalid or ErrStreamTokenExpired. The caller checks the purpose
// and stack against the stream being opened.
func (s *StreamSigner) Verify(token string, now time.Time) (StreamClaims, error) {
	rest, ok := strings.CutPrefix(token, StreamTokenPrefix)
	if !ok || len(rest) != base64.RawURLEncoding.EncodedLen(streamPayloadLen+sha256.Size) {
		return StreamClaims{}, ErrStreamTokenInvalid
	}
	b, err := tokenEncoding.DecodeString(rest)
	if err != nil {
		return StreamClaims{}, ErrStreamTokenInvalid
	}
	payload, sum := b[:streamPayloadLen], b[streamPayloadLen:]
	if !hmac.Equal(sum, s.mac(payload)) || payload[0] != streamVersion {
		return StreamClaims{}, ErrStreamTokenInvalid
	}
	var c StreamClaims
	for p, code := range purposeCodes {
		if payload[1] == code {
			c.Purpose = p
		}
	}
	if c.Purpose == "" {
		return StreamClaims{}, ErrStreamTokenInvalid
	}
	copy(c.UserID[:], payload[2:18])
	copy(c.TokenID[:], payload[18:34])
	copy(c.Object[:], payload[34:50])
	c.Expires = time.Unix(int64(binary.BigEndian.Uint64(payload[50:58])), 0)
	if !now.Before(c.Expires) {
		return c, ErrStreamTokenExpired
	}
	return c, nil
}

func (s *StreamSigner) mac(payload []byte) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write(payload)
	return m.Sum(nil)
}
