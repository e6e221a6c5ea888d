package sshx

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	"horizon/shared/horizon"
)

// Defaults for the zero values of Config's durations and counts.
const (
	defaultDialTimeout       = 10 * time.Second
	defaultHandshakeTimeout  = 15 * time.Second
	defaultKeepaliveInterval = 15 * time.Second
	defaultKeepaliveCountMax = 3
)

// ErrKeepalive is wrapped by the error Wait returns, and by errors of operations that were cut
// short, when the connection was closed because the server stopped answering keepalives.
var ErrKeepalive = errors.New("ssh server stopped answering keepalives")

// ErrAuth: the server refused the client's key (matched with errors.Is; the handshake's own
// error is kept in the chain).
var ErrAuth = errors.New("ssh server refused the key")

// Config says where and how to connect. Addr, User, Signer and HostKey are required.
type Config struct {
	// Addr is host:port; a bare host means port 22.
	Addr string
	// User is the remote user name.
	User string
	// Signer is the client key used for public-key authentication.
	Signer ssh.Signer
	// HostKey is the pinned SHA-256 fingerprint of the server's host key, as ssh.FingerprintSHA256
	// prints it ("SHA256:…"). Required: there is no "accept any key".
	HostKey string
	// HostKeyType is the pinned key's type as ssh.PublicKey.Type reports it ("ssh-ed25519",
	// "ecdsa-sha2-nistp256", "ssh-rsa"). Optional but recommended: when set, the server is asked
	// for that key type only, so a server with several host keys presents the pinned one.
	HostKeyType string
	// DialTimeout bounds the TCP connect. Default 10 s.
	DialTimeout time.Duration
	// HandshakeTimeout bounds key exchange plus authentication. Default 15 s.
	HandshakeTimeout time.Duration
	// KeepaliveInterval is how often a keepalive@openssh.com request is sent. Default 15 s.
	KeepaliveInterval time.Duration
	// KeepaliveCountMax is how many intervals may pass without an answer before the connection
	// is closed as dead. Default 3.
	KeepaliveCountMax int
}

// Validate reports every problem with c at once, as a *horizon.ValidationError whose fields are
// addr, user, signer, host_key, host_key_type and the durations.
func (c Config) Validate() error {
	var p horizon.Problems
	if c.Addr == "" {
		p.Add("addr", "is required")
	}
	if c.User == "" {
		p.Add("user", "is required")
	}
	if c.Signer == nil {
		p.Add("signer", "is required")
	}
	switch {
	case c.HostKey == "":
		p.Add("host_key", "is required: pin the server's host key (an admin can read it with ScanHostKey)")
	default:
		if err := checkFingerprint(c.HostKey); err != nil {
			p.Add("host_key", "%v", err)
		}
	}
	for _, d := range []struct {
		field string
		v     time.Duration
	}{
		{"dial_timeout", c.DialTimeout},
		{"handshake_timeout", c.HandshakeTimeout},
		{"keepalive_interval", c.KeepaliveInterval},
	} {
		if d.v < 0 {
			p.Add(d.field, "must not be negative")
		}
	}
	if c.KeepaliveCountMax < 0 {
		p.Add("keepalive_count_max", "must not be negative")
	}
	return p.Err()
}

func (c Config) withDefaults() Config {
	c.Addr = withDefaultPort(c.Addr)
	if c.DialTimeout == 0 {
		c.DialTimeout = defaultDialTimeout
	}
	if c.HandshakeTimeout == 0 {
		c.HandshakeTimeout = defaultHandshakeTimeout
	}
	if c.KeepaliveInterval == 0 {
		c.KeepaliveInterval = defaultKeepaliveInterval
	}
	if c.KeepaliveCountMax == 0 {
		c.KeepaliveCountMax = defaultKeepaliveCountMax
	}
	return c
}

func withDefaultPort(addr string) string {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return net.JoinHostPort(addr, "22")
	}
	return addr
}

// Client is an authenticated SSH connection. It is safe for concurrent use: every Run, Upload
// and ReadFile opens its own channel. Close it when done.
type Client struct {
	addr string
	conn *ssh.Client
	done chan struct{} // closed once the connection is gone

	mu     sync.Mutex
	reason error // why the connection ended; nil after Close
	closed bool  // Close was called
}

// Dial connects to cfg.Addr, verifies the host key against the pin during key exchange and
// authenticates with cfg.Signer. It returns a *horizon.ValidationError for a bad Config (an
// empty pin included) before touching the network, a *HostKeyError when the server presents
// another key (no credentials are sent), ctx.Err() when ctx ends first, and otherwise an error
// naming the address; a handshake that outlasts HandshakeTimeout wraps os.ErrDeadlineExceeded.
func Dial(ctx context.Context, cfg Config) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	conf := &ssh.ClientConfig{
		User:              cfg.User,
		Auth:              []ssh.AuthMethod{ssh.PublicKeys(cfg.Signer)},
		HostKeyCallback:   pinned(cfg.Addr, cfg.HostKey),
		HostKeyAlgorithms: hostKeyAlgorithms(cfg.HostKeyType),
	}
	nc, err := (&net.Dialer{Timeout: cfg.DialTimeout}).DialContext(ctx, "tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", cfg.Addr, err)
	}
	conn, err := handshake(ctx, nc, cfg.Addr, conf, cfg.HandshakeTimeout)
	if err != nil {
		_ = nc.Close() // the handshake failed; nothing to flush
		var hk *HostKeyError
		if errors.As(err, &hk) || errors.Is(err, ctx.Err()) {
			return nil, err
		}
		// x/crypto/ssh has no error type for a refused key; its wording is matched here, once.
		if strings.Contains(err.Error(), "unable to authenticate") {
			return nil, fmt.Errorf("ssh handshake with %s: %w: %w", cfg.Addr, ErrAuth, err)
		}
		return nil, fmt.Errorf("ssh handshake with %s: %w", cfg.Addr, err)
	}
	c := &Client{addr: cfg.Addr, conn: conn, done: make(chan struct{})}
	go c.watch()
	go c.keepalive(cfg.KeepaliveInterval, cfg.KeepaliveCountMax)
	return c, nil
}

// Addr returns the address the client is connected to.
func (c *Client) Addr() string { return c.addr }

// Close closes the connection, cutting short any operation in progress. Closing an already
// closed client returns nil.
func (c *Client) Close() error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	err := c.conn.Close()
	<-c.done
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// Wait blocks until the connection is gone and says why: nil after Close, an error wrapping
// ErrKeepalive when the server stopped answering, otherwise the transport's error.
func (c *Client) Wait() error {
	<-c.done
	return c.err()
}

// err returns why the connection ended, or nil while it is up or after Close.
func (c *Client) err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	return c.reason
}

// broken returns why the connection is gone (net.ErrClosed after Close), or nil while it is up.
// Operations use it to report the cause instead of the symptom ("EOF") when the connection
// dropped under them. A connection that is going down may take up to settle to say so.
func (c *Client) broken(settle time.Duration) error {
	c.mu.Lock()
	reason := c.reason // keepalive records its verdict before closing
	c.mu.Unlock()
	if reason == nil {
		t := time.NewTimer(settle)
		defer t.Stop()
		select {
		case <-c.done:
		case <-t.C:
			return nil
		}
	}
	if err := c.err(); err != nil {
		return err
	}
	return net.ErrClosed
}

func (c *Client) watch() {
	err := c.conn.Wait()
	c.mu.Lock()
	if c.reason == nil {
		if err == nil {
			err = errors.New("ssh connection closed by the server")
		}
		c.reason = fmt.Errorf("ssh connection to %s: %w", c.addr, err)
	}
	c.mu.Unlock()
	close(c.done)
}

// keepalive sends keepalive@openssh.com requests and closes the connection when countMax
// intervals pass without an answer. Any answer counts, including a refusal: it proves the peer is
// there.
func (c *Client) keepalive(interval time.Duration, countMax int) {
	t := time.NewTicker(interval)
	defer t.Stop()
	answered := make(chan struct{}, 1)
	waiting, missed := false, 0
	for {
		select {
		case <-c.done:
			return
		case <-answered:
			waiting, missed = false, 0
		case <-t.C:
			if !waiting {
				waiting = true
				go func() {
					// Returns an error only once the connection is closed, which done reports.
					if _, _, err := c.conn.SendRequest("keepalive@openssh.com", true, nil); err == nil {
						answered <- struct{}{}
					}
				}()
				continue
			}
			if missed++; missed < countMax {
				continue
			}
			c.mu.Lock()
			if c.reason == nil {
				c.reason = fmt.Errorf("ssh connection to %s: %w (no answer for %s)", c.addr, ErrKeepalive, time.Duration(countMax)*interval)
			}
			c.mu.Unlock()
			_ = c.conn.Close() // the peer is gone; there is nothing to flush to it
			return
		}
	}
}
