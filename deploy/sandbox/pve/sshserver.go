package pve

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
)

// sshServer is the SSH plumbing the node and VM servers share: a listener, the handshake
// with host keys and authentication chosen per connection (so a rotated host key or a new
// authorized key applies to the next login), and tracking of live connections so that
// stop can cut them.
type sshServer struct {
	log *slog.Logger
	// config builds the server config for one new connection.
	config func() (*ssh.ServerConfig, error)
	// session serves one session channel until it ends; ctx ends when the server stops.
	session func(ctx context.Context, ch ssh.Channel, reqs <-chan *ssh.Request)

	mu     sync.Mutex
	ln     net.Listener
	conns  map[net.Conn]struct{}
	ready  int // connections past their handshake
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// listen opens the listener on addr and serves until stop.
func (s *sshServer) listen(ctx context.Context, addr string) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	sctx, cancel := context.WithCancel(context.Background())
	s.mu.Lock()
	s.ln, s.cancel = ln, cancel
	if s.conns == nil {
		s.conns = map[net.Conn]struct{}{}
	}
	s.mu.Unlock()
	s.wg.Add(1)
	go s.accept(sctx, ln)
	return nil
}

func (s *sshServer) addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

func (s *sshServer) accept(ctx context.Context, ln net.Listener) {
	defer s.wg.Done()
	for {
		nc, err := ln.Accept()
		if err != nil {
			return // closed by stop
		}
		s.mu.Lock()
		if s.ln != ln {
			// stop ran between Accept and here: it can no longer see this connection.
			s.mu.Unlock()
			nc.Close()
			return
		}
		s.conns[nc] = struct{}{}
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer func() {
				s.mu.Lock()
				delete(s.conns, nc)
				s.mu.Unlock()
				nc.Close() // already closed when the session ended normally
			}()
			s.handle(ctx, nc)
		}()
	}
}

func (s *sshServer) handle(ctx context.Context, nc net.Conn) {
	cfg, err := s.config()
	if err != nil {
		s.log.Warn("sandbox: ssh config", "error", err)
		return
	}
	// A client that connects and says nothing must not hold a goroutine forever.
	_ = nc.SetDeadline(time.Now().Add(30 * time.Second))
	conn, chans, reqs, err := ssh.NewServerConn(nc, cfg)
	if err != nil {
		s.log.Debug("sandbox: ssh handshake", "remote", nc.RemoteAddr().String(), "error", err)
		return
	}
	_ = nc.SetDeadline(time.Time{})
	defer conn.Close()
	s.mu.Lock()
	s.ready++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.ready--
		s.mu.Unlock()
	}()
	go ssh.DiscardRequests(reqs)
	var sessions sync.WaitGroup
	defer sessions.Wait() // they end with the connection, which ends chans
	for newCh := range chans {
		if newCh.ChannelType() != "session" {
			_ = newCh.Reject(ssh.UnknownChannelType, "only session channels")
			continue
		}
		ch, chReqs, err := newCh.Accept()
		if err != nil {
			continue
		}
		sessions.Add(1)
		go func() {
			defer sessions.Done()
			s.session(ctx, ch, chReqs)
		}()
	}
}

// live is how many connections are open, past their handshake.
func (s *sshServer) live() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ready
}

// drop closes every live connection and keeps listening.
func (s *sshServer) drop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for nc := range s.conns {
		nc.Close()
	}
}

// stop closes the listener and every live connection, and waits for their goroutines.
func (s *sshServer) stop() {
	s.mu.Lock()
	if s.ln == nil {
		s.mu.Unlock()
		return
	}
	s.ln.Close() // unblocks accept
	s.ln = nil
	s.cancel()
	for nc := range s.conns {
		nc.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// newHostKey generates an ed25519 host key and its OpenSSH PEM encoding.
func newHostKey() (ssh.Signer, []byte, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		return nil, nil, err
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		return nil, nil, err
	}
	return signer, pem.EncodeToMemory(block), nil
}

// parseAuthorizedKey parses one authorized_keys line.
func parseAuthorizedKey(line string) (ssh.PublicKey, error) {
	pk, _, _, _, err := ssh.ParseAuthorizedKey([]byte(line))
	if err != nil {
		return nil, fmt.Errorf("parse authorized key %.40q: %w", line, err)
	}
	return pk, nil
}

// keyAllowed reports whether key is among allowed (compared by wire form).
func keyAllowed(allowed []ssh.PublicKey, key ssh.PublicKey) bool {
	want := key.Marshal()
	for _, k := range allowed {
		if string(k.Marshal()) == string(want) {
			return true
		}
	}
	return false
}

var errKeyRefused = errors.New("public key not authorized")
