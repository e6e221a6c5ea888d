package secrets_test

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"

	"horizon/shared/secrets"
)

func newMasker(values ...string) *secrets.Masker {
	var m secrets.Masker
	m.Add(values...)
	return &m
}

func TestMaskerMasksEveryEncoding(t *testing.T) {
	t.Parallel()
	const secret = "p@ss w/rd+ü?&<x>" // bytes that every encoding below changes
	b := []byte(secret)
	tests := []struct {
		name, form string
	}{
		{"plain", secret},
		{"base64 std padded", base64.StdEncoding.EncodeToString(b)},
		{"base64 std unpadded", base64.RawStdEncoding.EncodeToString(b)},
		{"base64 url padded", base64.URLEncoding.EncodeToString(b)},
		{"base64 url unpadded", base64.RawURLEncoding.EncodeToString(b)},
		{"hex lower", hex.EncodeToString(b)},
		{"hex upper", strings.ToUpper(hex.EncodeToString(b))},
		{"url query", url.QueryEscape(secret)},
		{"url path", url.PathEscape(secret)},
		{"json", `p@ss w/rd+ü?\u0026\u003cx\u003e`},
		{"json without html escaping", `p@ss w/rd+ü?&<x>`},
	}
	m := newMasker(secret)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			line := "before " + tc.form + " after"
			if got, want := m.Mask(line), "before [masked] after"; got != want {
				t.Fatalf("Mask(%q) = %q, want %q", line, got, want)
			}
		})
	}
}

func TestMaskerMasksSecretInsideLongerBase64(t *testing.T) {
	t.Parallel()
	const secret = "correct-horse-battery"
	m := newMasker(secret)
	for _, user := range []string{"al", "bob", "carl"} { // the three alignments
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
			blob := enc.EncodeToString([]byte(user + ":" + secret + "@host"))
			got := m.Mask("Authorization: Basic " + blob)
			if !strings.Contains(got, secrets.Masked) {
				t.Errorf("user %q: %q not masked", user, got)
				continue
			}
			// What is left visible must not decode to a recognisable part of the secret.
			for _, part := range strings.Split(strings.TrimPrefix(got, "Authorization: Basic "), secrets.Masked) {
				dec, _ := enc.DecodeString(part[:len(part)/4*4])
				if bytes.Contains(dec, []byte("horse")) {
					t.Errorf("user %q: visible part %q decodes to %q", user, part, dec)
				}
			}
		}
	}
}

func TestMaskerMasksEachLineOfMultilineSecret(t *testing.T) {
	t.Parallel()
	key := "-----BEGIN KEY-----\nMIIEvQIBADANBgkqhkiG9w0B\r\nAQEFAASCBKcwggSjAgEAAoIB\n-----END KEY-----\n"
	m := newMasker(key)
	tests := []struct{ in, want string }{
		{"MIIEvQIBADANBgkqhkiG9w0B", "[masked]"},
		{"      AQEFAASCBKcwggSjAgEAAoIB", "      [masked]"}, // indented, as in YAML output
		{"key: " + key, "key: [masked]"},                     // the whole value in one string
		{"bW9yZQ== " + base64.StdEncoding.EncodeToString([]byte(key)), "bW9yZQ== [masked]"},
	}
	for _, tc := range tests {
		if got := m.Mask(tc.in); got != tc.want {
			t.Errorf("Mask(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestMaskerOverlappingSecrets(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		secrets []string
		in      string
		want    string
	}{
		{"overlapping", []string{"abcdefgh", "efghijkl"}, "x abcdefghijkl y", "x [masked] y"},
		{"nested", []string{"password123", "word1"}, "x password123 word1 y", "x [masked] [masked] y"},
		{"adjacent", []string{"aaaa1111", "bbbb2222"}, "aaaa1111bbbb2222", "[masked]"},
		{"repeated", []string{"s3cr3t"}, "s3cr3t,s3cr3t;s3cr3t", "[masked],[masked];[masked]"},
		{"at both ends", []string{"edge-secret"}, "edge-secret middle edge-secret", "[masked] middle [masked]"},
		{"given with white space", []string{"  padded-secret\t"}, "token=padded-secret;", "token=[masked];"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := newMasker(tc.secrets...).Mask(tc.in); got != tc.want {
				t.Fatalf("Mask(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestMaskerDoesNotMaskOtherText(t *testing.T) {
	t.Parallel()
	m := newMasker("hunter2!", "abc", "", "      ", " ab \n") // all but the first are too short to mask
	if m.Len() != 1 {
		t.Fatalf("Len() = %d, want 1: values under MinSecretLength must be ignored", m.Len())
	}
	for _, in := range []string{
		"",
		"x",
		"hunter2 is not the secret",
		"HUNTER2! differs in case",
		"abc def abc",
		"indented        text",
		"aHVudGVy is the base64 of a mere prefix",
		strings.Repeat("plain log line ", 20),
	} {
		if got := m.Mask(in); got != in {
			t.Errorf("Mask(%q) = %q, want it unchanged", in, got)
		}
	}
	var empty secrets.Masker
	if got := empty.Mask("hunter2!"); got != "hunter2!" {
		t.Errorf("zero Masker changed %q to %q", "hunter2!", got)
	}
}

func TestMaskerConcurrentAddAndMask(t *testing.T) {
	t.Parallel()
	var m secrets.Masker
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 200 {
				m.Add(fmt.Sprintf("secret-%d-%03d", g, i))
			}
		})
		wg.Go(func() {
			for i := range 200 {
				s := fmt.Sprintf("secret-%d-%03d", g, i)
				got := m.Mask("v=" + s)
				if got != "v="+s && got != "v=[masked]" {
					t.Errorf("Mask returned %q", got)
				}
			}
		})
	}
	wg.Wait()
	if got := m.Mask("v=secret-3-199"); got != "v=[masked]" {
		t.Fatalf("after every Add: got %q, want v=[masked]", got)
	}
	if m.Len() != 800 {
		t.Fatalf("Len() = %d, want 800", m.Len())
	}
}

func TestSafeCutNeverSplitsASecret(t *testing.T) {
	m := newMasker("s3cret-value")
	s := "aaaa" + "s3cret-value" + "bbbb" // the secret is s[4:16]
	tests := []struct{ at, want int }{
		{2, 2},   // before it
		{4, 4},   // at its start
		{10, 4},  // inside it: cut before it
		{16, 16}, // at its end
		{18, 18}, // after it
	}
	for _, tt := range tests {
		if got := m.SafeCut(s, tt.at); got != tt.want {
			t.Errorf("SafeCut(%q, %d) = %d, want %d", s, tt.at, got, tt.want)
		}
	}
	if got := m.SafeCut("s3cret-values3cret-value", 20); got != 0 {
		t.Errorf("secrets from the start: SafeCut = %d, want 0", got)
	}
	if m.MaxLen() < len("s3cret-value") || (&secrets.Masker{}).MaxLen() != 0 {
		t.Errorf("MaxLen %d", m.MaxLen())
	}
}
