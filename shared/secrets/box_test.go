package secrets_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"horizon/shared/secrets"
)

func newBox(t *testing.T, seed byte) *secrets.Box {
	t.Helper()
	b, err := secrets.NewBox(bytes.Repeat([]byte{seed}, secrets.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestBoxRoundTripAndRefusals(t *testing.T) {
	t.Parallel()
	b := newBox(t, 1)
	sealed := b.SealString("nagios.password", "s3cret")
	if bytes.Contains(sealed, []byte("s3cret")) {
		t.Fatal("ciphertext contains the plaintext")
	}
	got, err := b.OpenString("nagios.password", sealed)
	if err != nil || got.Reveal() != "s3cret" {
		t.Fatalf("got %q, %v; want s3cret", got.Reveal(), err)
	}
	if _, err := b.Open("other.purpose", sealed); !errors.Is(err, secrets.ErrUndecryptable) {
		t.Fatalf("open for another purpose: got %v, want ErrUndecryptable", err)
	}
	if _, err := newBox(t, 2).Open("nagios.password", sealed); !errors.Is(err, secrets.ErrUndecryptable) {
		t.Fatalf("open with another key: got %v, want ErrUndecryptable", err)
	}
	sealed[len(sealed)-1] ^= 1
	if _, err := b.Open("nagios.password", sealed); !errors.Is(err, secrets.ErrUndecryptable) {
		t.Fatalf("open tampered: got %v, want ErrUndecryptable", err)
	}
	if first, second := b.SealString("p", "x"), b.SealString("p", "x"); string(first) == string(second) {
		t.Fatal("two seals of one value are identical: nonce reused")
	}
}

func TestParseKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in string
		ok       bool
	}{
		{"std padded", "AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=", true},
		{"raw url", "AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE", true},
		{"short", "AQEB", false},
		{"garbage", "not base64!!", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := secrets.ParseKey(tc.in)
			if (err == nil) != tc.ok {
				t.Fatalf("ParseKey(%q) err = %v, want ok=%v", tc.in, err, tc.ok)
			}
		})
	}
}

func TestValueNeverPrints(t *testing.T) {
	t.Parallel()
	v := secrets.Value("hunter2")
	var logBuf bytes.Buffer
	slog.New(slog.NewJSONHandler(&logBuf, nil)).Info("oops", "password", v)
	js, _ := json.Marshal(struct{ P secrets.Value }{v})
	for name, s := range map[string]string{
		"%v": fmt.Sprintf("%v", v), "%s": fmt.Sprintf("%s", v), "%q": fmt.Sprintf("%q", v),
		"%#v": fmt.Sprintf("%#v", v), "slog": logBuf.String(), "json": string(js),
	} {
		if strings.Contains(s, "hunter2") {
			t.Errorf("%s printed the secret: %s", name, s)
		}
	}
	if v.Reveal() != "hunter2" {
		t.Fatal("Reveal lost the value")
	}
}
