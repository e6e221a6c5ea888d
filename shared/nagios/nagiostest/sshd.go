package nagiostest

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"horizon/shared/sshx"
)

const (
	sshdBin    = "/usr/sbin/sshd"
	sftpServer = "/usr/lib/openssh/sftp-server"
)

// SSHD is a running OpenSSH server on loopback: its own host key, one authorized key, the
// user running the test. It is stopped on test cleanup.
type SSHD struct {
	// Addr is host:port; Fingerprint its host key's SHA256 fingerprint; User who logs in.
	Addr, Fingerprint, User string

	config, log string
	cmd         *exec.Cmd // nil while stopped
	exited      chan struct{}
}

// StartSSHD starts sshd -D with a configuration of its own under dir, authorizing key.
func StartSSHD(t testing.TB, dir string, key ssh.PublicKey) *SSHD {
	t.Helper()
	for _, p := range []string{sshdBin, sftpServer} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("nagiostest: %s is missing: install Debian's openssh-server (`go tool task deps` does)", p)
		}
	}
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	if me.Uid == "0" {
		// sshd insists on its privilege separation directory when run as root.
		if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
			t.Fatal(err)
		}
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	hostKey := filepath.Join(dir, "ssh_host_ed25519_key")
	if err := os.WriteFile(hostKey, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	authorized := filepath.Join(dir, "authorized_keys")
	if err := os.WriteFile(authorized, ssh.MarshalAuthorizedKey(key), 0o600); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	cfg := filepath.Join(dir, "sshd_config")
	write(t, cfg, fmt.Sprintf(`Port %d
ListenAddress 127.0.0.1
HostKey %s
AuthorizedKeysFile %s
PidFile none
StrictModes no
UsePAM no
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
Subsystem sftp %s
`, port, hostKey, authorized, sftpServer))
	s := &SSHD{Addr: fmt.Sprintf("127.0.0.1:%d", port), Fingerprint: ssh.FingerprintSHA256(signer.PublicKey()), User: me.Username,
		config: cfg, log: filepath.Join(dir, "sshd.log")}
	s.Start(t)
	t.Cleanup(func() { s.Stop(t) })
	return s
}

// Stop stops sshd and its sessions (Nagios's host lost to Horizon); Start starts it again on
// the same address with the same host key.
func (s *SSHD) Stop(t testing.TB) {
	t.Helper()
	if s.cmd == nil {
		return
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGTERM) // sshd and its sessions
	select {
	case <-s.exited:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.exited
	}
	s.cmd = nil
}

// Start starts sshd -D and waits until it answers.
func (s *SSHD) Start(t testing.TB) {
	t.Helper()
	if s.cmd != nil {
		return
	}
	cmd := exec.Command(sshdBin, "-D", "-e", "-f", s.config)
	// Its log goes to a file: a pipe would keep Wait waiting for every session process that
	// inherited it.
	logFile, err := os.OpenFile(s.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = logFile.Close() }() // sshd has its own descriptor
	cmd.Stderr = logFile
	cmd.WaitDelay = 2 * time.Second
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("nagiostest: start sshd: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	s.cmd, s.exited = cmd, exited
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := sshx.ScanHostKey(ctx, s.Addr)
		cancel()
		if err == nil {
			return
		}
		select {
		case <-exited:
			logs, _ := os.ReadFile(s.log)
			t.Fatalf("nagiostest: sshd exited: %s", logs)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("nagiostest: sshd does not answer on %s: %v", s.Addr, err)
		}
	}
}

func freePort(t testing.TB) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	return ln.Addr().(*net.TCPAddr).Port
}
