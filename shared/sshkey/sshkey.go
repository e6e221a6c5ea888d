// Package sshkey validates the public keys users register for their VMs.
//
// A key is one authorized_keys line. Accepted: Ed25519, ECDSA (P-256/384/521), their FIDO
// (sk-) variants, and RSA of at least 2048 bits. DSA is refused (OpenSSH disabled it: 1024-bit
// and SHA-1 only), as are short RSA keys, certificates and options prefixes (from=, command=):
// Horizon installs plain keys on machines it builds.
package sshkey

import (
	"crypto/rsa"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/ssh"
)

// MinRSABits is the smallest RSA modulus accepted.
const MinRSABits = 2048

var errDSA = errors.New("is a DSA key, which is insecure and refused; use ed25519 or RSA of at least 2048 bits")

// Key is a parsed, accepted public key.
type Key struct {
	// Line is the key re-encoded canonically ("type base64 comment").
	Line string
	// Type is the SSH key type, e.g. "ssh-ed25519".
	Type string
	// Bits is the key size (RSA modulus bits; curve size for ECDSA; 256 for Ed25519).
	Bits int
	// Fingerprint is the SHA256 fingerprint as OpenSSH prints it ("SHA256:…").
	Fingerprint string
}

// Parse parses and checks one authorized_keys line. Its error is a sentence for the user.
func Parse(line string) (Key, error) {
	line = strings.TrimSpace(line)
	if line == "" {
		return Key{}, errors.New("is empty")
	}
	if strings.ContainsAny(line, "\r\n") {
		return Key{}, errors.New("must be a single authorized_keys line")
	}
	// x/crypto/ssh no longer parses DSA keys at all; recognise them first to say why they fail.
	for _, f := range strings.Fields(line) {
		//lint:ignore SA1019 recognising DSA is how it is refused with a reason
		if f == ssh.KeyAlgoDSA {
			return Key{}, errDSA
		}
	}
	pub, comment, options, rest, err := ssh.ParseAuthorizedKey([]byte(line))
	if err != nil {
		return Key{}, errors.New("is not an OpenSSH public key (expected e.g. \"ssh-ed25519 AAAA… user@host\")")
	}
	if len(options) > 0 {
		return Key{}, errors.New("must not carry authorized_keys options")
	}
	if len(strings.TrimSpace(string(rest))) > 0 {
		return Key{}, errors.New("must be a single key")
	}
	if _, isCert := pub.(*ssh.Certificate); isCert {
		return Key{}, errors.New("must be a plain public key, not a certificate")
	}
	bits, err := keyBits(pub)
	if err != nil {
		return Key{}, err
	}
	canonical := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pub)))
	if comment != "" {
		canonical += " " + comment
	}
	return Key{Line: canonical, Type: pub.Type(), Bits: bits, Fingerprint: ssh.FingerprintSHA256(pub)}, nil
}

func keyBits(pub ssh.PublicKey) (int, error) {
	switch pub.Type() {
	case ssh.KeyAlgoRSA:
		ck, ok := pub.(ssh.CryptoPublicKey)
		if !ok {
			return 0, errors.New("is an unreadable RSA key")
		}
		rk, ok := ck.CryptoPublicKey().(*rsa.PublicKey)
		if !ok {
			return 0, errors.New("is an unreadable RSA key")
		}
		if n := rk.N.BitLen(); n < MinRSABits {
			return 0, fmt.Errorf("is a %d-bit RSA key; at least %d bits are required", n, MinRSABits)
		}
		return rk.N.BitLen(), nil
	case ssh.KeyAlgoED25519, ssh.KeyAlgoSKED25519:
		return 256, nil
	case ssh.KeyAlgoECDSA256, ssh.KeyAlgoSKECDSA256:
		return 256, nil
	case ssh.KeyAlgoECDSA384:
		return 384, nil
	case ssh.KeyAlgoECDSA521:
		return 521, nil
	default:
		return 0, fmt.Errorf("has unsupported type %s", pub.Type())
	}
}
