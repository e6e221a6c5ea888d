package pve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/pkg/sftp"
	"go.yaml.in/yaml/v3"
	"golang.org/x/crypto/ssh"
)

// vmSSH is a running VM's SSH server, on the VM's own loopback address. It accepts the keys
// cloud-init would install and runs commands with bash in the VM's directory.
type vmSSH struct {
	srv      *sshServer
	dir      string
	keys     []ssh.PublicKey
	hostKeys []ssh.Signer
}

func (s *vmSSH) addr() string { return s.srv.addr() }

// vmIP is the IPv4 address of ipconfig0, or "" (none, or dhcp).
func vmIP(conf map[string]string) string {
	opts, err := parsePropertyString(conf["ipconfig0"], "")
	if err != nil || opts["ip"] == "" || opts["ip"] == "dhcp" {
		return ""
	}
	pfx, err := netip.ParsePrefix(opts["ip"])
	if err != nil {
		return ""
	}
	return pfx.Addr().String()
}

// startVMSSH starts the VM's SSH server when its ipconfig0 has a static (loopback) address.
// The caller holds c.mu.
func (c *Cluster) startVMSSH(v *vm) error {
	ip := vmIP(v.Conf)
	if ip == "" {
		return nil
	}
	keys, hostKeys, err := c.cloudInitKeys(v)
	if err != nil {
		return err
	}
	if len(hostKeys) == 0 {
		if v.hostKey == nil {
			if v.hostKey, _, err = newHostKey(); err != nil {
				return err
			}
		}
		hostKeys = []ssh.Signer{v.hostKey}
	}
	s := &vmSSH{dir: c.VMDir(v.VMID), keys: keys, hostKeys: hostKeys}
	s.srv = &sshServer{log: c.sb.log, config: s.config, session: s.session}
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return err
	}
	addr := net.JoinHostPort(ip, fmt.Sprint(c.sb.cfg.VMSSHPort))
	if err := s.srv.listen(context.Background(), addr); err != nil {
		return fmt.Errorf("sandbox: start SSH for VM %d on %s: %w", v.VMID, addr, err)
	}
	v.ssh = s
	return nil
}

func (c *Cluster) stopVMSSH(v *vm) {
	if v.ssh != nil {
		v.ssh.srv.stop()
		v.ssh = nil
	}
}

// cloudInit is the part of cloud-init user-data the sandbox acts on.
type cloudInit struct {
	SSHAuthorizedKeys []string          `yaml:"ssh_authorized_keys"`
	Users             []yaml.Node       `yaml:"users"`
	SSHKeys           map[string]string `yaml:"ssh_keys"`
}

// cloudInitKeys reads the authorized keys and host keys cloud-init would set up: from the
// cicustom user snippet when there is one (as PVE, which then ignores sshkeys), else from
// sshkeys.
func (c *Cluster) cloudInitKeys(v *vm) ([]ssh.PublicKey, []ssh.Signer, error) {
	opts, _ := parsePropertyString(v.Conf["cicustom"], "")
	user := opts["user"]
	if user == "" {
		return parseSSHKeysParam(v.Conf["sshkeys"]), nil, nil
	}
	f, ok := c.parseFileVolume(user, "")
	if !ok || f.content != "snippets" {
		return nil, nil, fmt.Errorf("cicustom: '%s' is not a snippets volume", user)
	}
	data, err := os.ReadFile(c.fileVolumePath(f, v.Node))
	if err != nil {
		return nil, nil, fmt.Errorf("cicustom: volume '%s' does not exist", user)
	}
	var ci cloudInit
	if err := yaml.Unmarshal(data, &ci); err != nil {
		return nil, nil, fmt.Errorf("cicustom: user-data %s is not valid YAML: %w", user, err)
	}
	lines := ci.SSHAuthorizedKeys
	for _, u := range ci.Users {
		var entry struct {
			SSHAuthorizedKeys []string `yaml:"ssh_authorized_keys"`
		}
		if u.Kind == yaml.MappingNode && u.Decode(&entry) == nil {
			lines = append(lines, entry.SSHAuthorizedKeys...)
		}
	}
	var keys []ssh.PublicKey
	for _, l := range lines {
		if k, err := parseAuthorizedKey(l); err == nil {
			keys = append(keys, k)
		}
	}
	var hostKeys []ssh.Signer
	for _, name := range []string{"ed25519_private", "ecdsa_private", "rsa_private"} {
		if pemText := ci.SSHKeys[name]; pemText != "" {
			signer, err := ssh.ParsePrivateKey([]byte(pemText))
			if err != nil {
				return nil, nil, fmt.Errorf("cicustom: ssh_keys.%s: %w", name, err)
			}
			hostKeys = append(hostKeys, signer)
		}
	}
	return keys, hostKeys, nil
}

// parseSSHKeysParam decodes PVE's url-encoded sshkeys value.
func parseSSHKeysParam(v string) []ssh.PublicKey {
	decoded, err := url.PathUnescape(v)
	if err != nil {
		return nil
	}
	var keys []ssh.PublicKey
	for _, l := range strings.Split(decoded, "\n") {
		if k, err := parseAuthorizedKey(l); err == nil {
			keys = append(keys, k)
		}
	}
	return keys
}

func (s *vmSSH) config() (*ssh.ServerConfig, error) {
	cfg := &ssh.ServerConfig{
		ServerVersion: "SSH-2.0-OpenSSH_9.6p1 Ubuntu-3ubuntu13",
		PublicKeyCallback: func(_ ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
			if !keyAllowed(s.keys, key) {
				return nil, errKeyRefused
			}
			return &ssh.Permissions{}, nil
		},
	}
	for _, k := range s.hostKeys {
		cfg.AddHostKey(k)
	}
	return cfg, nil
}

// session serves one session channel: env, then exec or the sftp subsystem; signals go to
// the command's process group.
func (s *vmSSH) session(ctx context.Context, ch ssh.Channel, reqs <-chan *ssh.Request) {
	defer ch.Close()
	env := []string{}
	var proc *process
	for {
		var req *ssh.Request
		select {
		case req = <-reqs:
		case <-ctx.Done():
			if proc != nil {
				proc.kill(syscall.SIGKILL)
			}
			return
		}
		if req == nil {
			if proc != nil && ctx.Err() != nil {
				proc.kill(syscall.SIGKILL) // the VM is stopping
			} else if proc != nil {
				proc.kill(syscall.SIGHUP) // the client went away, as sshd hangs up
			}
			return
		}
		switch req.Type {
		case "env":
			var kv struct{ Name, Value string }
			if ssh.Unmarshal(req.Payload, &kv) == nil {
				env = append(env, kv.Name+"="+kv.Value)
			}
			_ = req.Reply(true, nil)
		case "exec":
			var cmd struct{ Command string }
			if proc != nil || ssh.Unmarshal(req.Payload, &cmd) != nil {
				_ = req.Reply(false, nil)
				continue
			}
			// Accepted before the command starts, as sshd does: a command that ends at once
			// would otherwise have its exit status and the channel's close overtake this reply,
			// and the client, still waiting for it, reads EOF for a command that did run.
			_ = req.Reply(true, nil)
			p, err := s.run(ch, cmd.Command, env)
			if err != nil {
				// As sshd does when it cannot start the shell: the reason goes to stderr and
				// the exit status is 127, so the client can say why.
				_, _ = fmt.Fprintf(ch.Stderr(), "sandbox: cannot start the command: %v\n", err)
				_, _ = ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{127}))
				return
			}
			proc = p
		case "subsystem":
			if subsystemName(req.Payload) != "sftp" || proc != nil {
				_ = req.Reply(false, nil)
				continue
			}
			_ = req.Reply(true, nil)
			go ssh.DiscardRequests(reqs)
			fsys := &sftpFS{resolve: rootedAt(s.dir)}
			srv := sftp.NewRequestServer(ch, fsys.handlers(), sftp.WithStartDirectory("/"))
			_ = srv.Serve() // ends when the client closes the channel
			_ = srv.Close()
			return
		case "signal":
			var sig struct{ Signal string }
			if proc != nil && ssh.Unmarshal(req.Payload, &sig) == nil {
				if n, ok := signals[sig.Signal]; ok {
					proc.kill(n)
				}
			}
			if req.WantReply {
				_ = req.Reply(true, nil)
			}
		default:
			// pty-req, shell, x11 …: the sandbox runs commands only.
			_ = req.Reply(false, nil)
		}
	}
}

var signals = map[string]syscall.Signal{
	"ABRT": syscall.SIGABRT, "ALRM": syscall.SIGALRM, "FPE": syscall.SIGFPE, "HUP": syscall.SIGHUP,
	"ILL": syscall.SIGILL, "INT": syscall.SIGINT, "KILL": syscall.SIGKILL, "PIPE": syscall.SIGPIPE,
	"QUIT": syscall.SIGQUIT, "SEGV": syscall.SIGSEGV, "TERM": syscall.SIGTERM, "USR1": syscall.SIGUSR1,
	"USR2": syscall.SIGUSR2,
}

// process is a command started for an exec request, in its own process group.
type process struct {
	cmd  *exec.Cmd
	done chan struct{}
}

func (p *process) kill(sig syscall.Signal) {
	select {
	case <-p.done:
	default:
		_ = syscall.Kill(-p.cmd.Process.Pid, sig) // the group may be gone already
	}
}

// run starts bash -c command in the VM directory (its cwd and HOME) with the session's
// environment, wires stdin/stdout/stderr to the channel, and reports the exit status (or
// the signal) when it ends, then closes the channel.
func (s *vmSSH) run(ch ssh.Channel, command string, env []string) (*process, error) {
	cmd := exec.Command("bash", "-c", command)
	cmd.Dir = s.dir
	cmd.Env = append([]string{
		"HOME=" + s.dir, "USER=root", "LOGNAME=root", "SHELL=/bin/bash",
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
	}, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stdout = ch
	cmd.Stderr = ch.Stderr()
	// Output still held by a background child is given up after this long, so that a
	// session always ends.
	cmd.WaitDelay = 10 * time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() {
		_, _ = io.Copy(stdin, ch) // ends at the client's EOF or when the process exits
		stdin.Close()
	}()
	go func() {
		err := cmd.Wait()
		close(p.done)
		status := uint32(0)
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				sigName := "KILL"
				for name, n := range signals {
					if n == ws.Signal() {
						sigName = name
					}
				}
				_, _ = ch.SendRequest("exit-signal", false, ssh.Marshal(struct {
					Signal     string
					CoreDumped bool
					Error      string
					Lang       string
				}{Signal: sigName}))
				_ = ch.CloseWrite()
				_ = ch.Close()
				return
			}
			status = uint32(exitErr.ExitCode())
		} else if err != nil {
			status = 255
		}
		_, _ = ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{status}))
		_ = ch.CloseWrite()
		_ = ch.Close()
	}()
	return p, nil
}
