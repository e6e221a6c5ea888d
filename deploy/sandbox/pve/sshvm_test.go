package pve

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	proxmox "github.com/luthermonson/go-proxmox"
	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"

	"horizon/shared/testkit"
)

// startVMWithCloudInit uploads user-data over the node's SFTP (as Horizon does), creates a
// VM using it with a random loopback address, starts it and returns the VM's SSH address.
func (e *testEnv) startVMWithCloudInit(t *testing.T, vmid int, userData string) string {
	t.Helper()
	snippet := fmt.Sprintf("/var/lib/vz/snippets/vm-%d.yaml", vmid)
	if err := writeRemote(e.sftp(t, "pve1"), snippet, userData); err != nil {
		t.Fatal(err)
	}
	ip := randomLoopback(t)
	e.mustTaskOK(t, "POST", "/nodes/pve1/qemu", url.Values{
		"vmid": {fmt.Sprint(vmid)}, "ipconfig0": {"ip=" + ip + "/8,gw=127.0.0.1"},
		"cicustom": {fmt.Sprintf("user=local:snippets/vm-%d.yaml", vmid)},
	})
	e.mustTaskOK(t, "POST", fmt.Sprintf("/nodes/pve1/qemu/%d/status/start", vmid), nil)
	addr := e.c.VMSSHAddr(vmid)
	if want := net.JoinHostPort(ip, "22"); addr != want {
		t.Fatalf("VM SSH address %q, want %q", addr, want)
	}
	return addr
}

func dialVM(addr string, signer ssh.Signer, hostKey ssh.HostKeyCallback) (*ssh.Client, error) {
	return ssh.Dial("tcp", addr, &ssh.ClientConfig{
		User: "ubuntu", Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: hostKey, Timeout: 10 * time.Second,
	})
}

func TestVMSSHRunsCommandsWithCloudInitKeys(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	userKey, deployKey, stranger := newClientKey(t), newClientKey(t), newClientKey(t)
	hostKey, hostPEM, err := newHostKey()
	if err != nil {
		t.Fatal(err)
	}
	userData := fmt.Sprintf(`#cloud-config
hostname: web-1
ssh_authorized_keys:
  - %s
users:
  - default
  - name: horizon
    ssh_authorized_keys:
      - %s
ssh_keys:
  ed25519_private: |
%s`, authorizedKeyLine(userKey.PublicKey()), authorizedKeyLine(deployKey.PublicKey()), indent(string(hostPEM), "    "))
	addr := e.startVMWithCloudInit(t, 100, userData)

	pinned := ssh.FixedHostKey(hostKey.PublicKey())
	if _, err := dialVM(addr, stranger, pinned); err == nil {
		t.Fatal("a key not in cloud-init logged in")
	}
	for _, key := range []ssh.Signer{userKey, deployKey} {
		conn, err := dialVM(addr, key, pinned)
		if err != nil {
			t.Fatalf("login with a cloud-init key (host key pinned from ssh_keys): %v", err)
		}
		conn.Close()
	}

	conn, err := dialVM(addr, deployKey, pinned)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	// env, stdin, stdout, stderr, exit status, working directory.
	s, err := conn.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Setenv("HORIZON_OUTPUT", "out.env"); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	s.Stdout, s.Stderr = &stdout, &stderr
	s.Stdin = strings.NewReader("from stdin\n")
	err = s.Run(`read line; echo "$line"; echo ip=1.2.3.4 > "$HORIZON_OUTPUT"; echo oops >&2; pwd; echo "$HOME"; exit 3`)
	var exit *ssh.ExitError
	if !errors.As(err, &exit) || exit.ExitStatus() != 3 {
		t.Fatalf("Run: got %v, want exit status 3", err)
	}
	dir := e.c.VMDir(100)
	if want := "from stdin\n" + dir + "\n" + dir + "\n"; stdout.String() != want || stderr.String() != "oops\n" {
		t.Fatalf("stdout %q stderr %q", stdout.String(), stderr.String())
	}
	if b, err := os.ReadFile(filepath.Join(dir, "out.env")); err != nil || string(b) != "ip=1.2.3.4\n" {
		t.Fatalf("output file: %q, %v", b, err)
	}

	// SFTP is rooted at the VM directory.
	sc, err := sftp.NewClient(conn)
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	if err := writeRemote(sc, "/script.sh", "echo hi\n"); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "script.sh")); err != nil || string(b) != "echo hi\n" {
		t.Fatalf("sftp write: %q, %v", b, err)
	}

	// A signal reaches the command's process group.
	s, err = conn.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start("sleep 60"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Wait() }()
	testkit.Eventually(t, 5*time.Second, "the signal ends the command", func() bool {
		_ = s.Signal(ssh.SIGTERM)
		select {
		case err := <-done:
			if !errors.As(err, &exit) || exit.Signal() != "TERM" {
				t.Fatalf("Wait after SIGTERM: %v", err)
			}
			return true
		case <-time.After(50 * time.Millisecond):
			return false
		}
	})

	// Stopping the VM stops its SSH server.
	e.mustTaskOK(t, "POST", "/nodes/pve1/qemu/100/status/stop", nil)
	if _, err := net.DialTimeout("tcp", addr, 5*time.Second); err == nil {
		t.Fatal("a stopped VM accepts SSH connections")
	}
	if e.c.VMSSHAddr(100) != "" {
		t.Fatal("a stopped VM reports an SSH address")
	}
}

func TestVMSSHFromSSHKeysParameter(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	key := newClientKey(t)
	ip := randomLoopback(t)
	e.mustTaskOK(t, "POST", "/nodes/pve2/qemu", url.Values{
		"vmid": {"300"}, "ipconfig0": {"ip=" + ip + "/24"},
		"sshkeys": {proxmox.EncodeSSHKeys(authorizedKeyLine(key.PublicKey()))},
		"start":   {"1"},
	})
	conn, err := dialVM(e.c.VMSSHAddr(300), key, hostKeyAny)
	if err != nil {
		t.Fatalf("login with the sshkeys key: %v", err)
	}
	out, err := mustSession(t, conn).Output("echo ok")
	if err != nil || string(out) != "ok\n" {
		t.Fatalf("Output: %q, %v", out, err)
	}
	conn.Close()
	// Deleting the VM removes its directory and its SSH server.
	e.mustTaskOK(t, "POST", "/nodes/pve2/qemu/300/status/stop", nil)
	e.mustTaskOK(t, "DELETE", "/nodes/pve2/qemu/300", nil)
	if _, err := os.Stat(e.c.VMDir(300)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("VM directory after delete: %v", err)
	}
}

func TestVMStartFailsWithoutItsSnippet(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.mustTaskOK(t, "POST", "/nodes/pve1/qemu", url.Values{
		"vmid": {"100"}, "ipconfig0": {"ip=" + randomLoopback(t) + "/8"}, "cicustom": {"user=local:snippets/missing.yaml"},
	})
	upid := mustOK(t, e.call(t, "POST", "/nodes/pve1/qemu/100/status/start", nil)).(string)
	if tk := e.waitTask(t, upid); !strings.Contains(tk.ExitStatus, "local:snippets/missing.yaml") {
		t.Fatalf("start with a missing snippet: %q", tk.ExitStatus)
	}
	if e.vm(t, 100).Status != "stopped" {
		t.Fatal("the VM runs although its start failed")
	}
}

func mustSession(t *testing.T, c *ssh.Client) *ssh.Session {
	t.Helper()
	s, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n") + "\n"
}

// hostKeyAny accepts any host key: for VMs whose host key is random (no ssh_keys in
// cloud-init), in tests that are about something else.
var hostKeyAny = ssh.InsecureIgnoreHostKey()

// TestVMSSHAnswersExecBeforeTheCommandEnds: a command that ends at once (a probe, `test -e`)
// still gets its exec request accepted before its exit status and the channel's close. A
// server that lets the command's end overtake the reply makes the client's Start fail with
// EOF for a command that did run.
func TestVMSSHAnswersExecBeforeTheCommandEnds(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	key := newClientKey(t)
	e.mustTaskOK(t, "POST", "/nodes/pve1/qemu", url.Values{
		"vmid": {"310"}, "ipconfig0": {"ip=" + randomLoopback(t) + "/24"},
		"sshkeys": {proxmox.EncodeSSHKeys(authorizedKeyLine(key.PublicKey()))},
		"start":   {"1"},
	})
	conn, err := dialVM(e.c.VMSSHAddr(310), key, hostKeyAny)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const workers, runs = 8, 40
	errs := make(chan error, workers*runs)
	for range workers {
		go func() {
			for range runs {
				s, err := conn.NewSession()
				if err == nil {
					err = s.Run("exit 0")
					s.Close()
				}
				errs <- err
			}
		}()
	}
	for range workers * runs {
		if err := <-errs; err != nil {
			t.Fatalf("a command that ends at once: %v", err)
		}
	}
}
