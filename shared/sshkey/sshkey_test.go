//lint:file-ignore SA1019 generating a DSA key is the point: it must be refused

package sshkey_test

import (
	"crypto/dsa"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"math/big"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"horizon/shared/sshkey"
)

func authorizedLine(t *testing.T, key any) string {
	t.Helper()
	pub, err := ssh.NewPublicKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pub))) + " someone@laptop"
}

func TestParse(t *testing.T) {
	t.Parallel()
	edPub, _, _ := ed25519.GenerateKey(rand.Reader)
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	rsa2048, _ := rsa.GenerateKey(rand.Reader, 2048)
	rsa1024, _ := rsa.GenerateKey(rand.Reader, 1024)
	var dsaKey dsa.PrivateKey
	if err := dsa.GenerateParameters(&dsaKey.Parameters, rand.Reader, dsa.L1024N160); err != nil {
		t.Fatal(err)
	}
	if err := dsa.GenerateKey(&dsaKey, rand.Reader); err != nil {
		t.Fatal(err)
	}
	// x/crypto/ssh no longer encodes DSA keys, so the ssh-dss wire format is built by hand.
	dsaWire := ssh.Marshal(struct {
		Name       string
		P, Q, G, Y *big.Int
	}{ssh.KeyAlgoDSA, dsaKey.P, dsaKey.Q, dsaKey.G, dsaKey.Y})
	dsaLine := "ssh-dss " + base64.StdEncoding.EncodeToString(dsaWire) + " old@box"

	tests := []struct {
		name     string
		line     string
		wantErr  string
		wantBits int
	}{
		{"ed25519", authorizedLine(t, edPub), "", 256},
		{"ecdsa", authorizedLine(t, &ec.PublicKey), "", 256},
		{"rsa 2048", authorizedLine(t, &rsa2048.PublicKey), "", 2048},
		{"rsa 1024", authorizedLine(t, &rsa1024.PublicKey), "1024-bit RSA", 0},
		{"dsa", dsaLine, "DSA", 0},
		{"garbage", "ssh-rsa not-base64 x", "not an OpenSSH public key", 0},
		{"empty", "  ", "empty", 0},
		{"two lines", authorizedLine(t, edPub) + "\n" + authorizedLine(t, edPub), "single", 0},
		{"options", `command="/bin/sh" ` + authorizedLine(t, edPub), "options", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k, err := sshkey.Parse(tc.line)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got err %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("got err %v, want none", err)
			}
			if k.Bits != tc.wantBits || !strings.HasPrefix(k.Fingerprint, "SHA256:") || !strings.HasSuffix(k.Line, "someone@laptop") {
				t.Fatalf("got %+v", k)
			}
		})
	}
}
