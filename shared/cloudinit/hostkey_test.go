package cloudinit_test

import (
	"fmt"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"horizon/shared/cloudinit"
)

func TestNewHostKey(t *testing.T) {
	t.Parallel()
	k, err := cloudinit.NewHostKey()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(k.Private.Reveal(), "-----BEGIN OPENSSH PRIVATE KEY-----\n") {
		t.Fatalf("private key is not OpenSSH PEM")
	}
	if s := fmt.Sprint(k); strings.Contains(s, "PRIVATE") {
		t.Fatalf("printing a HostKey shows the private key: %s", s)
	}
	signer, err := ssh.ParsePrivateKey([]byte(k.Private.Reveal()))
	if err != nil {
		t.Fatal(err)
	}
	pub, err := k.PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	if pub.Type() != ssh.KeyAlgoED25519 || string(pub.Marshal()) != string(signer.PublicKey().Marshal()) {
		t.Fatalf("public key %q does not belong to the private key", k.Public)
	}
	if got := ssh.FingerprintSHA256(signer.PublicKey()); got != k.Fingerprint || !strings.HasPrefix(got, "SHA256:") {
		t.Fatalf("fingerprint %q, want %q", k.Fingerprint, got)
	}
	// The pinned key verifies the host that presents it and refuses any other.
	check := ssh.FixedHostKey(pub)
	if err := check("vm:22", nil, signer.PublicKey()); err != nil {
		t.Fatalf("FixedHostKey refused the pinned key: %v", err)
	}
	other, err := cloudinit.NewHostKey()
	if err != nil {
		t.Fatal(err)
	}
	otherPub, _ := other.PublicKey()
	if err := check("vm:22", nil, otherPub); err == nil {
		t.Fatal("FixedHostKey accepted another key")
	}
}
