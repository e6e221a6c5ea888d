// Package tools_test checks the scripts under deploy/tools that the Taskfile runs.
package tools_test

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// everyPackage is what a bare Debian machine with Go, Postgres and Redis lacks for the suite.
var everyPackage = []string{"nodejs", "npm", "chromium", "prometheus", "prometheus-node-exporter",
	"nagios4-core", "nagios4-cgi", "openssh-server", "redis-sentinel"}

// deps runs ensure-deps.sh as cred (nil: as this process) with env added to this process's
// environment and returns its output and exit code.
func deps(t *testing.T, cred *syscall.Credential, env ...string) (string, int) {
	t.Helper()
	cmd := exec.Command("bash", "ensure-deps.sh")
	cmd.Env = append(os.Environ(), env...)
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("ensure-deps.sh (%s, %s):\n%s", strings.Join(env, " "), time.Since(start).Round(time.Millisecond), out)
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), code
}

// TestEnsureDepsPrintsTheCommandWhenItMayNotInstall: on a bare machine (no package file under
// HORIZON_DEPS_ROOT) where it may not install, the task stops at once (exit 1, before any apt)
// and prints the one command that installs every missing package, redis-sentinel included.
func TestEnsureDepsPrintsTheCommandWhenItMayNotInstall(t *testing.T) {
	t.Parallel()
	bare := t.TempDir()
	if err := os.Chmod(bare, 0o755); err != nil {
		t.Fatal(err)
	}
	cases := map[string]*syscall.Credential{"told not to install": nil}
	if os.Geteuid() == 0 {
		// Not root is the other reason it may not: run it as nobody.
		cases["not root"] = &syscall.Credential{Uid: 65534, Gid: 65534}
	}
	for name, cred := range cases {
		t.Run(name, func(t *testing.T) {
			// The services are pointed elsewhere: only the packages are checked.
			env := []string{"HORIZON_DEPS_ROOT=" + bare, "HORIZON_TEST_DATABASE_URL=postgres://elsewhere", "HORIZON_TEST_REDIS_URL=redis://elsewhere"}
			if cred == nil {
				env = append(env, "HORIZON_DEPS_INSTALL=no")
			}
			out, code := deps(t, cred, env...)
			if code != 1 {
				t.Fatalf("exit code %d, want 1", code)
			}
			if !strings.Contains(out, "\n  sudo bash deploy/tools/ensure-deps.sh\n") {
				t.Errorf("the output does not give the command to run on a line of its own")
			}
			if strings.Contains(out, "installing") {
				t.Errorf("it tried to install")
			}
			for _, p := range everyPackage {
				if !strings.Contains(out, " "+p+" ") && !strings.Contains(out, " "+p+"\n") {
					t.Errorf("the output does not name %s", p)
				}
			}
		})
	}
}

// TestEnsureDepsPassesWhenAllIsPresent: on this machine, which `go tool task deps` prepared,
// the check — every package file, Postgres and Redis answering — installs and starts nothing
// and says nothing. Its duration is logged (well under a
// second when the machine is idle); no timing is asserted.
func TestEnsureDepsPassesWhenAllIsPresent(t *testing.T) {
	t.Parallel()
	out, code := deps(t, nil, "HORIZON_DEPS_INSTALL=no")
	if code != 0 || out != "" {
		t.Fatalf("exit code %d, output %q; want 0 and nothing (run `go tool task deps` first)", code, out)
	}
}
