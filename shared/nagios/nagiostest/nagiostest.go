// Package nagiostest runs a real Nagios Core 4 for tests: Debian's nagios4 in the foreground with
// a configuration of its own (Debian's object templates and commands, plus a directory Horizon
// owns), its real objectjson.cgi served by net/http/cgi behind Basic or Digest authentication on
// loopback, and OpenSSH's sshd -D on a loopback port (its own host key, one authorized key, the
// user running the test) through which Horizon writes over SFTP, verifies (nagios4 -v) and
// reloads (a HUP to the daemon's pid: in the foreground Nagios writes no lock file).
//
// It needs /usr/sbin/nagios4, /usr/lib/cgi-bin/nagios4 and /usr/sbin/sshd (Debian packages
// nagios4-core, nagios4-cgi and openssh-server, which `go tool task deps` installs).
package nagiostest

import (
	"context"
	"crypto/ed25519"
	"crypto/md5"
	"crypto/rand"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"horizon/shared/nagios"
	"horizon/shared/sshx"
)

const (
	daemon = "/usr/sbin/nagios4"
	cgiDir = "/usr/lib/cgi-bin/nagios4"
)

// Host groups the server defines besides Debian's linux-servers (which has a member).
const (
	// EmptyHostgroup has no member: objectjson's hostgrouplist leaves it out.
	EmptyHostgroup = "horizon-empty"
	// Hostgroup has a member.
	Hostgroup = "linux-servers"
)

// Options configure a Server.
type Options struct {
	// Digest makes the CGIs ask for Digest authentication instead of Basic.
	Digest bool
}

// Server is a running Nagios with its CGIs and SSH access. It is stopped on test cleanup.
type Server struct {
	// URL is the CGI base; Username and Password its credentials.
	URL, Username, Password string
	// Dir is the directory Horizon owns (in the daemon's cfg_dir); Verify and Reload the commands.
	Dir, Verify, Reload string
	// SSH is the SSH server; ClientKey is authorized there, ClientKeyPEM is it in OpenSSH format.
	SSH          *SSHD
	ClientKey    ssh.Signer
	ClientKeyPEM string

	cmd *exec.Cmd
}

// Start starts a Nagios; the test fails at once when nagios4 is not installed.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	for _, p := range []string{daemon, filepath.Join(cgiDir, "objectjson.cgi")} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("nagiostest: %s is missing: install Debian's nagios4-core and nagios4-cgi (`go tool task deps` does)", p)
		}
	}
	d := t.TempDir()
	s := &Server{Username: "horizon", Password: "n4gios-" + rand.Text()[:10], Dir: filepath.Join(d, "conf.d", "horizon")}
	for _, dir := range []string{s.Dir, filepath.Join(d, "checkresults")} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(d, "base.cfg"), fmt.Sprintf("define hostgroup {\n  hostgroup_name %s\n  alias Empty\n}\n", EmptyHostgroup))
	write(t, filepath.Join(d, "resource.cfg"), "$USER1$=/usr/lib/nagios/plugins\n")
	var cfg strings.Builder
	for _, f := range []string{"commands", "contacts", "timeperiods", "templates", "localhost"} {
		fmt.Fprintf(&cfg, "cfg_file=/etc/nagios4/objects/%s.cfg\n", f)
	}
	if _, err := os.Stat("/etc/nagios-plugins/config"); err == nil {
		cfg.WriteString("cfg_dir=/etc/nagios-plugins/config\n")
	}
	// The query handler's socket defaults to one path for every nagios4 on the machine (two
	// test packages at once: "Address already in use"); a socket path must be short.
	qdir, err := os.MkdirTemp("", "nq")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(qdir) })
	fmt.Fprintf(&cfg, "query_socket=%s/nagios.qh\n", qdir)
	fmt.Fprintf(&cfg, `cfg_file=%[1]s/base.cfg
cfg_dir=%[1]s/conf.d
log_file=%[1]s/nagios.log
object_cache_file=%[1]s/objects.cache
precached_object_file=%[1]s/objects.precache
resource_file=%[1]s/resource.cfg
status_file=%[1]s/status.dat
state_retention_file=%[1]s/retention.dat
retain_state_information=0
command_file=%[1]s/nagios.cmd
check_external_commands=0
lock_file=%[1]s/nagios.lock
temp_file=%[1]s/nagios.tmp
temp_path=%[1]s
check_result_path=%[1]s/checkresults
nagios_user=root
nagios_group=root
use_syslog=0
execute_service_checks=0
execute_host_checks=0
enable_notifications=0
enable_flap_detection=0
`, d)
	mainCfg := filepath.Join(d, "nagios.cfg")
	write(t, mainCfg, cfg.String())
	cgiCfg := filepath.Join(d, "cgi.cfg")
	write(t, cgiCfg, fmt.Sprintf(`main_config_file=%s
physical_html_path=/usr/share/nagios4/htdocs
url_html_path=/nagios4
use_authentication=1
authorized_for_system_information=%[2]s
authorized_for_configuration_information=%[2]s
authorized_for_all_hosts=%[2]s
authorized_for_all_services=%[2]s
`, mainCfg, s.Username))

	s.cmd = exec.Command(daemon, mainCfg)
	s.cmd.Stdout, s.cmd.Stderr = nil, nil
	s.cmd.WaitDelay = 2 * time.Second
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("nagiostest: start nagios4: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = s.cmd.Process.Kill()
			<-exited
		}
	})
	s.Verify = daemon + " -v " + mainCfg
	s.Reload = fmt.Sprintf("kill -HUP %d", s.cmd.Process.Pid)

	srv := httptest.NewServer(s.handler(cgiCfg, opts.Digest))
	t.Cleanup(srv.Close)
	s.URL = srv.URL + "/cgi-bin/nagios4"

	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if s.ClientKey, err = ssh.NewSignerFromKey(priv); err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	s.ClientKeyPEM = string(pem.EncodeToMemory(block))
	s.SSH = StartSSHD(t, d, s.ClientKey.PublicKey())

	// Ready once the CGIs read the object cache the daemon writes at start.
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, err := s.Client().Commands(context.Background())
		if err == nil {
			break
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(filepath.Join(d, "nagios.log"))
			t.Fatalf("nagiostest: nagios4 exited at start: %s", log)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("nagiostest: the CGIs do not answer within 20s: %v", err)
		}
	}
	return s
}

func write(t testing.TB, name, s string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// handler serves /cgi-bin/nagios4/NAME.cgi from Debian's CGIs after authenticating the request.
func (s *Server) handler(cgiCfg string, digest bool) http.Handler {
	const realm = "Nagios Access"
	nonce := hex.EncodeToString([]byte(rand.Text()))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ok := false
		if digest {
			ok = s.digestOK(r, realm, nonce)
		} else {
			u, p, has := r.BasicAuth()
			ok = has && u == s.Username && p == s.Password
		}
		if !ok {
			if digest {
				w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Digest realm=%q, nonce=%q, algorithm=MD5, qop="auth"`, realm, nonce))
			} else {
				w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Basic realm=%q`, realm))
			}
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		name, found := strings.CutPrefix(r.URL.Path, "/cgi-bin/nagios4/")
		if !found || strings.Contains(name, "/") || !strings.HasSuffix(name, ".cgi") {
			http.NotFound(w, r)
			return
		}
		h := &cgi.Handler{Path: filepath.Join(cgiDir, name), Root: "/cgi-bin/nagios4/" + name,
			Env: []string{"NAGIOS_CGI_CONFIG=" + cgiCfg, "REMOTE_USER=" + s.Username}}
		h.ServeHTTP(w, r)
	})
}

// digestOK checks an RFC 7616 MD5 response with qop=auth.
func (s *Server) digestOK(r *http.Request, realm, nonce string) bool {
	v, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Digest ")
	if !ok {
		return false
	}
	p := map[string]string{}
	for _, part := range strings.Split(v, ",") {
		k, val, _ := strings.Cut(strings.TrimSpace(part), "=")
		p[k] = strings.Trim(val, `"`)
	}
	h := func(s string) string { sum := md5.Sum([]byte(s)); return hex.EncodeToString(sum[:]) }
	ha1 := h(s.Username + ":" + realm + ":" + s.Password)
	ha2 := h(r.Method + ":" + p["uri"])
	want := h(ha1 + ":" + nonce + ":" + p["nc"] + ":" + p["cnonce"] + ":" + p["qop"] + ":" + ha2)
	return p["username"] == s.Username && p["nonce"] == nonce && p["uri"] == r.URL.RequestURI() && p["response"] == want
}

// Client reads this server's CGIs.
func (s *Server) Client() *nagios.Client {
	return &nagios.Client{URL: s.URL, Username: s.Username, Password: s.Password}
}

// Target writes to this server.
func (s *Server) Target() nagios.Target {
	return nagios.Target{SSH: sshx.Config{Addr: s.SSH.Addr, User: s.SSH.User, Signer: s.ClientKey, HostKey: s.SSH.Fingerprint},
		Dir: s.Dir, Verify: s.Verify, Reload: s.Reload}
}

// WaitHosts waits (up to 20 s) until the hosts Nagios monitors satisfy ok, and returns them.
func (s *Server) WaitHosts(t testing.TB, ok func(hosts []string) bool) []string {
	t.Helper()
	var hosts []string
	deadline := time.Now().Add(20 * time.Second)
	for {
		var err error
		hosts, err = s.Client().Hosts(context.Background())
		if err == nil && ok(hosts) {
			return hosts
		}
		if time.Now().After(deadline) {
			t.Fatalf("nagiostest: hosts are %v (last error %v)", hosts, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Registration is the body of POST /v1/nagios-servers that registers this server.
func (s *Server) Registration(name string) map[string]any {
	return map[string]any{"name": name, "url": s.URL, "username": s.Username, "password": s.Password,
		"ssh_address": s.SSH.Addr, "ssh_user": s.SSH.User, "ssh_private_key": s.ClientKeyPEM,
		"ssh_host_key_fingerprint": s.SSH.Fingerprint, "config_dir": s.Dir, "verify_command": s.Verify, "reload_command": s.Reload}
}
