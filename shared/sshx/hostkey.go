package sshx

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
)

// HostKeyError reports that a server presented a host key other than the pinned one. It can mean
// the node was reinstalled, or that someone is intercepting the connection; it is never retried
// and never resolved automatically. Want and Got are SHA-256 fingerprints.
type HostKeyError struct {
	Addr string
	Want string
	Got  string
}

func (e *HostKeyError) Error() string {
	return fmt.Sprintf("ssh host key of %s is %s, but %s is pinned: re-pin only after checking the node", e.Addr, e.Got, e.Want)
}

// checkFingerprint reports whether s looks like what ssh.FingerprintSHA256 prints.
func checkFingerprint(s string) error {
	b64, ok := strings.CutPrefix(s, "SHA256:")
	if !ok {
		return errors.New(`must start with "SHA256:"`)
	}
	if sum, err := base64.RawStdEncoding.DecodeString(b64); err != nil || len(sum) != 32 {
		return errors.New("is not a SHA-256 fingerprint (43 unpadded base64 characters after the prefix)")
	}
	return nil
}

// pinned returns a callback that accepts exactly the key with fingerprint want.
func pinned(addr, want string) ssh.HostKeyCallback {
	return func(_ string, _ net.Addr, key ssh.PublicKey) error {
		if want == "" {
			// Unreachable through Dial, which validates first; kept so that no code path trusts
			// an unpinned host.
			return errors.New("ssh host key is not pinned")
		}
		if got := ssh.FingerprintSHA256(key); got != want {
			return &HostKeyError{Addr: addr, Want: want, Got: got}
		}
		return nil
	}
}

// hostKeyAlgorithms returns the host-key algorithms that make a server present a key of type
// keyType (as ssh.PublicKey.Type reports it), or nil for x/crypto's default preference.
func hostKeyAlgorithms(keyType string) []string {
	switch keyType {
	case "":
		return nil
	case ssh.KeyAlgoRSA:
		// One RSA key signs with any of these; SHA-1 last, for old servers.
		return []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA}
	default:
		return []string{keyType}
	}
}

// errScanned stops a ScanHostKey handshake once the key has been seen.
var errScanned = errors.New("host key scanned")

// ScanHostKey connects to addr, completes key exchange and returns the host key the server
// presents, without authenticating. It is for an admin's explicit "trust on first use": show
// ssh.FingerprintSHA256 of the key, have a person confirm it, and store it as the pin. It never
// makes a later Dial trust anything by itself. The handshake is bounded by ctx and by a 15 s
// handshake timeout.
func ScanHostKey(ctx context.Context, addr string) (ssh.PublicKey, error) {
	addr = withDefaultPort(addr)
	var key ssh.PublicKey
	conf := &ssh.ClientConfig{
		User: "horizon-scan",
		HostKeyCallback: func(_ string, _ net.Addr, k ssh.PublicKey) error {
			key = k
			return errScanned
		},
	}
	nc, err := (&net.Dialer{Timeout: defaultDialTimeout}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("scan host key of %s: %w", addr, err)
	}
	defer func() { _ = nc.Close() }() // the handshake fails on purpose; nothing to flush
	_, err = handshake(ctx, nc, addr, conf, defaultHandshakeTimeout)
	if key != nil {
		return key, nil
	}
	return nil, fmt.Errorf("scan host key of %s: %w", addr, err)
}

// handshake runs the SSH handshake (key exchange and authentication) on nc, bounded by timeout
// and ctx. The caller owns nc and closes it on error.
func handshake(ctx context.Context, nc net.Conn, addr string, conf *ssh.ClientConfig, timeout time.Duration) (*ssh.Client, error) {
	if err := nc.SetDeadline(time.Now().Add(timeout)); err != nil {
		return nil, err
	}
	// A deadline in the past unblocks the handshake's reads and writes at once when ctx ends.
	stop := context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Unix(1, 0)) })
	c, chans, reqs, err := ssh.NewClientConn(nc, addr, conf)
	if !stop() {
		// ctx ended while we were handshaking, possibly just after success: the deadline may
		// already be in the past, so the connection is unusable either way.
		if c != nil {
			_ = c.Close() // abandoned, nothing to flush
		}
		return nil, ctx.Err()
	}
	if err != nil {
		var hk *HostKeyError
		if errors.As(err, &hk) {
			return nil, hk
		}
		return nil, err
	}
	if err := nc.SetDeadline(time.Time{}); err != nil {
		_ = c.Close() // unusable, nothing to flush
		return nil, err
	}
	return ssh.NewClient(c, chans, reqs), nil
}
