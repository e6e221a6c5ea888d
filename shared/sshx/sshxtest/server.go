// Package sshxtest runs a real SSH server for tests: x/crypto/ssh for the protocol, pkg/sftp for
// the sftp subsystem, and /bin/sh for exec requests, with the environment from "env" requests
// and "signal" requests delivered to the command's process group. It records what a test needs
// to observe (authentication attempts, connections, signals) and can stop answering on every
// connection (Freeze) to play a dead peer.
//
// It serves the local file system with absolute paths: tests use paths under t.TempDir().
package sshxtest

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"
)

// Options configure a Server. The zero value accepts any client key and any environment name.
type Options struct {
	// HostKey is the server's host key; a fresh ed25519 key when nil.
	HostKey ssh.Signer
	// ExtraHostKeys are further host keys of other types, as a real sshd has.
	ExtraHostKeys []ssh.Signer
	// AuthorizedKeys are the client keys accepted; any key when empty.
	AuthorizedKeys []ssh.PublicKey
	// AcceptEnv decides which "env" requests are accepted (sshd's AcceptEnv); all when nil.
	AcceptEnv func(name string) bool
	// HideSFTPExtensions are SFTP extensions the server does not advertise (e.g.
	// "posix-rename@openssh.com"), to exercise a client's fallbacks.
	HideSFTPExtensions []string
}

// Server is a running test SSH server. It is stopped on test cleanup.
type Server struct {
	// Addr is the host:port it listens on.
	Addr string
	// HostKey is its public host key, and Fingerprint that key's ssh.FingerprintSHA256.
	HostKey     ssh.PublicKey
	Fingerprint string

	opts Options
	conf *ssh.ServerConfig
	ln   net.Listener
	wg   sync.WaitGroup

	mu           sync.Mutex
	authAttempts int
	connsEnded   int
	signals      []string
	frozen       bool
	conns        map[net.Conn]struct{}
}

// NewKey returns a fresh ed25519 signer, for a client or a host key.
func NewKey(t testing.TB) ssh.Signer {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatalf("generate key: %v", err)
	}
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatalf("signer: %v", err)
	}
	return s
}

// Start starts a server on 127.0.0.1 and stops it when the test ends.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	if opts.HostKey == nil {
		opts.HostKey = NewKey(t)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	s := &Server{
		Addr:        ln.Addr().String(),
		HostKey:     opts.HostKey.PublicKey(),
		Fingerprint: ssh.FingerprintSHA256(opts.HostKey.PublicKey()),
		opts:        opts,
		ln:          ln,
		conns:       map[net.Conn]struct{}{},
	}
	s.conf = &ssh.ServerConfig{
		PublicKeyCallback: s.checkKey,
		AuthLogCallback: func(ssh.ConnMetadata, string, error) {
			s.mu.Lock()
			s.authAttempts++
			s.mu.Unlock()
		},
	}
	s.conf.AddHostKey(opts.HostKey)
	for _, k := range opts.ExtraHostKeys {
		s.conf.AddHostKey(k)
	}
	s.wg.Add(1)
	go s.serve()
	t.Cleanup(s.stop)
	return s
}

// AuthAttempts returns how many user-authentication requests (of any method, "none" included)
// reached the server.
func (s *Server) AuthAttempts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.authAttempts
}

// ConnsEnded returns how many connections the server has finished handling, whether the
// handshake failed or the connection was used and closed.
func (s *Server) ConnsEnded() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.connsEnded
}

// Signals returns the signal names received, in order ("TERM", "KILL").
func (s *Server) Signals() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.signals...)
}

// Freeze makes the server stop sending anything on every connection, current and future, as a
// peer that died without closing TCP would: requests get no answer, commands no output.
func (s *Server) Freeze() {
	s.mu.Lock()
	s.frozen = true
	s.mu.Unlock()
}

func (s *Server) isFrozen() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.frozen
}

func (s *Server) checkKey(_ ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
	if len(s.opts.AuthorizedKeys) == 0 {
		return nil, nil
	}
	for _, k := range s.opts.AuthorizedKeys {
		if string(k.Marshal()) == string(key.Marshal()) {
			return nil, nil
		}
	}
	return nil, errors.New("key not authorized")
}

func (s *Server) stop() {
	_ = s.ln.Close() // stops serve; nothing to flush
	s.mu.Lock()
	for c := range s.conns {
		_ = c.Close() // ends the connection's handlers, which kill their commands
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func (s *Server) serve() {
	defer s.wg.Done()
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns[nc] = struct{}{}
		s.mu.Unlock()
		s.wg.Add(1)
		go s.handleConn(nc)
	}
}

func (s *Server) handleConn(nc net.Conn) {
	defer s.wg.Done()
	defer func() {
		_ = nc.Close() // may already be closed by the peer
		s.mu.Lock()
		delete(s.conns, nc)
		s.connsEnded++
		s.mu.Unlock()
	}()
	conn, chans, reqs, err := ssh.NewServerConn(freezable{Conn: nc, s: s}, s.conf)
	if err != nil {
		return
	}
	defer func() { _ = conn.Close() }()
	go ssh.DiscardRequests(reqs) // answers keepalives (with a refusal, as OpenSSH does)
	var wg sync.WaitGroup
	for nch := range chans {
		if nch.ChannelType() != "session" {
			_ = nch.Reject(ssh.UnknownChannelType, "only session channels")
			continue
		}
		ch, chReqs, err := nch.Accept()
		if err != nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.session(ch, chReqs)
		}()
	}
	wg.Wait()
}

// session serves one session channel: env, exec, subsystem sftp and signal requests.
func (s *Server) session(ch ssh.Channel, reqs <-chan *ssh.Request) {
	defer func() { _ = ch.Close() }()
	var env []string
	var cmd *exec.Cmd
	exited := make(chan struct{})
	for {
		var req *ssh.Request
		var ok bool
		select {
		case req, ok = <-reqs:
		case <-exited:
			s.reportExit(ch, cmd)
			return
		}
		if !ok {
			// The client closed the channel: a command still running is killed, as sshd does
			// when the session ends.
			if cmd != nil {
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				<-exited
			}
			return
		}
		switch req.Type {
		case "env":
			var kv struct{ Name, Value string }
			accepted := ssh.Unmarshal(req.Payload, &kv) == nil && (s.opts.AcceptEnv == nil || s.opts.AcceptEnv(kv.Name))
			if accepted {
				env = append(env, kv.Name+"="+kv.Value)
			}
			_ = req.Reply(accepted, nil)
		case "exec":
			var p struct{ Command string }
			if cmd != nil || ssh.Unmarshal(req.Payload, &p) != nil {
				_ = req.Reply(false, nil)
				continue
			}
			c, err := start(p.Command, env, ch)
			if err != nil {
				_ = req.Reply(false, nil)
				continue
			}
			cmd = c
			go func() {
				_ = cmd.Wait() // the status is read from ProcessState
				close(exited)
			}()
			_ = req.Reply(true, nil)
		case "subsystem":
			var p struct{ Name string }
			if ssh.Unmarshal(req.Payload, &p) != nil || p.Name != "sftp" {
				_ = req.Reply(false, nil)
				continue
			}
			_ = req.Reply(true, nil)
			go ssh.DiscardRequests(reqs)
			srv, err := sftp.NewServer(&hideExtensions{Channel: ch, hide: s.opts.HideSFTPExtensions})
			if err != nil {
				return
			}
			_ = srv.Serve() // ends with io.EOF when the client closes the session
			return
		case "signal":
			var p struct{ Signal string }
			if ssh.Unmarshal(req.Payload, &p) != nil {
				continue
			}
			s.mu.Lock()
			s.signals = append(s.signals, p.Signal)
			s.mu.Unlock()
			if sig, ok := signals[p.Signal]; ok && cmd != nil {
				_ = syscall.Kill(-cmd.Process.Pid, sig)
			}
		default:
			if req.WantReply {
				_ = req.Reply(false, nil)
			}
		}
	}
}

var signals = map[string]syscall.Signal{
	"TERM": syscall.SIGTERM, "KILL": syscall.SIGKILL, "INT": syscall.SIGINT, "HUP": syscall.SIGHUP,
}

// start runs command with /bin/sh in a process group of its own, so that signals reach the
// shell's children too.
func start(command string, env []string, ch ssh.Channel) (*exec.Cmd, error) {
	cmd := exec.Command("/bin/sh", "-c", command)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	cmd.Stdout = ch
	cmd.Stderr = ch.Stderr()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Stdout and stderr are copied until every holder of the pipes exits; a child that outlives
	// a killed shell must not keep the session open for long.
	cmd.WaitDelay = 2 * time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		_, _ = io.Copy(stdin, ch) // ends when the client sends EOF or the command exits
		_ = stdin.Close()
	}()
	return cmd, nil
}

// reportExit sends exit-status, or exit-signal for a command killed by a signal.
func (s *Server) reportExit(ch ssh.Channel, cmd *exec.Cmd) {
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		name := ""
		for n, sig := range signals {
			if sig == ws.Signal() {
				name = n
			}
		}
		_, _ = ch.SendRequest("exit-signal", false, ssh.Marshal(&struct {
			Signal     string
			CoreDumped bool
			Error      string
			Lang       string
		}{Signal: name}))
		return
	}
	status := make([]byte, 4)
	binary.BigEndian.PutUint32(status, uint32(cmd.ProcessState.ExitCode()))
	_, _ = ch.SendRequest("exit-status", false, status)
}

// freezable drops everything the server writes once the server is frozen.
type freezable struct {
	net.Conn
	s *Server
}

func (f freezable) Write(p []byte) (int, error) {
	if f.s.isFrozen() {
		return len(p), nil
	}
	return f.Conn.Write(p)
}

// hideExtensions removes extensions from the SFTP server's version packet, the first thing the
// server writes (in one Write: pkg/sftp marshals it without a separate payload).
type hideExtensions struct {
	ssh.Channel
	hide []string
	done bool
}

func (h *hideExtensions) Write(p []byte) (int, error) {
	if h.done || len(h.hide) == 0 {
		return h.Channel.Write(p)
	}
	h.done = true
	const head = 4 + 1 + 4 // length, type, version
	if len(p) < head || p[4] != 2 {
		return h.Channel.Write(p)
	}
	out := append([]byte(nil), p[:head]...)
	rest := p[head:]
	for len(rest) > 0 {
		name, r, ok := cutString(rest)
		if !ok {
			return h.Channel.Write(p)
		}
		data, r, ok := cutString(r)
		if !ok {
			return h.Channel.Write(p)
		}
		if !slices.Contains(h.hide, string(name)) {
			out = binary.BigEndian.AppendUint32(out, uint32(len(name)))
			out = append(out, name...)
			out = binary.BigEndian.AppendUint32(out, uint32(len(data)))
			out = append(out, data...)
		}
		rest = r
	}
	binary.BigEndian.PutUint32(out, uint32(len(out)-4))
	if _, err := h.Channel.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// cutString splits an SSH string (uint32 length, bytes) off the front of b.
func cutString(b []byte) (s, rest []byte, ok bool) {
	if len(b) < 4 {
		return nil, nil, false
	}
	n := binary.BigEndian.Uint32(b)
	if uint64(len(b)-4) < uint64(n) {
		return nil, nil, false
	}
	return b[4 : 4+n], b[4+n:], true
}
