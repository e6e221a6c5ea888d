package workertest

import (
	"encoding/base64"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"horizon/shared/testkit"
)

// Build compiles the workers command (./workers, as production runs it) into a temporary
// directory of t and returns the binary's path, for tests that run workers as processes they
// can kill.
func Build(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "workers")
	// The package path builds from wherever the test runs inside the module.
	if out, err := exec.Command("go", "build", "-o", bin, "horizon/workers").CombinedOutput(); err != nil {
		t.Fatalf("build the workers: %v\n%s", err, out)
	}
	return bin
}

// ProcessConfig is what a workers process shares with the API under test.
type ProcessConfig struct {
	DatabaseURL string
	Namespace   string
	SecretKey   []byte
	// Env are further HORIZON_* settings ("NAME=value"), after the defaults below.
	Env []string
	// Output receives the process's log; nil writes it to the test's log.
	Output io.Writer
}

// Process starts the workers binary bin on the given database, Redis namespace and key, with a
// 1 s step heartbeat, an hourly reconcile (tests that need one run it or set their own) and
// work and git cache directories of the test's own. The process is killed when the test ends;
// the caller may kill it earlier (SIGKILL, to test a crash) and must then Wait for it.
func Process(t testing.TB, bin string, c ProcessConfig) *exec.Cmd {
	t.Helper()
	proc := exec.Command(bin)
	proc.Env = append(os.Environ(),
		"HORIZON_DATABASE_URL="+c.DatabaseURL,
		"HORIZON_REDIS_URL="+testkit.RedisURL(),
		"HORIZON_SECRET_KEY="+base64.StdEncoding.EncodeToString(c.SecretKey),
		"HORIZON_NAMESPACE="+c.Namespace,
		"HORIZON_GIT_CACHE_DIR="+t.TempDir(),
		"HORIZON_WORK_DIR="+t.TempDir(),
		"HORIZON_STEP_HEARTBEAT=1s",
		"HORIZON_RECONCILE_INTERVAL=1h",
		"HORIZON_LOG_FORMAT=text",
	)
	proc.Env = append(proc.Env, c.Env...)
	var out io.Writer = testLog{t}
	if c.Output != nil {
		out = c.Output
	}
	proc.Stdout, proc.Stderr = out, out
	if err := proc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proc.Process.Kill(); _ = proc.Wait() })
	return proc
}
