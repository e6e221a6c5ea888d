package auth_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"horizon/shared/auth"
)

func TestStreamTokens(t *testing.T) {
	t.Parallel()
	key := make([]byte, 32)
	key[0] = 1
	s, err := auth.NewStreamSigner(key)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := auth.NewStreamSigner(make([]byte, 32))
	now := time.Unix(1_700_000_000, 0)
	claims := auth.StreamClaims{Purpose: auth.StreamLogs, UserID: uuid.New(), TokenID: uuid.New(), Object: uuid.New(), Expires: now.Add(time.Minute)}
	tok := s.Sign(claims)
	if !strings.HasPrefix(tok, auth.StreamTokenPrefix) || auth.WellFormed(tok) {
		t.Fatalf("token %q: want the stream prefix and not the shape of an API token", tok)
	}
	got, err := s.Verify(tok, now)
	if err != nil || got != claims {
		t.Fatalf("verify = %+v, %v; want %+v", got, err, claims)
	}
	flipped := []byte(tok)
	flipped[len(auth.StreamTokenPrefix)+3] ^= 1
	tests := []struct {
		name  string
		token string
		at    time.Time
		want  error
	}{
		{"expired at its expiry", tok, now.Add(time.Minute), auth.ErrStreamTokenExpired},
		{"signed under another key", other.Sign(claims), now, auth.ErrStreamTokenInvalid},
		{"altered", string(flipped), now, auth.ErrStreamTokenInvalid},
		{"truncated", tok[:len(tok)-2], now, auth.ErrStreamTokenInvalid},
		{"an API token", auth.NewToken().Reveal(), now, auth.ErrStreamTokenInvalid},
		{"empty", "", now, auth.ErrStreamTokenInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := s.Verify(tc.token, tc.at); !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
	if _, err := auth.NewStreamSigner(make([]byte, 16)); err == nil {
		t.Fatal("a short key was accepted")
	}
}
