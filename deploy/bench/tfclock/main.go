// Command tfclock stands in for the Terraform binary in Horizon's engine benchmarks
// (workers/worker/bench_test.go), so that they can tell Terraform's own time from Horizon's. It
// runs the real binary with the same arguments, environment, working directory and standard
// streams, forwards SIGINT and SIGTERM to it, exits with its exit code, and appends one line per
// run to the file clock.log next to itself:
//
//	<working dir> TAB <subcommand, e.g. "apply" or "workspace new"> TAB <tfclock start> TAB
//	<real binary started> TAB <real binary exited> TAB <exit code> TAB <CPU time>
//
// Times are Unix nanoseconds; the CPU time (user + system, nanoseconds) is the real binary's
// and that of the processes it waited for (its provider plugins). The real binary's path is the content of the file "real" next to
// tfclock: Horizon gives Terraform a filtered environment, so configuration cannot come from it.
// What tfclock itself costs (its own start, the fork of the real binary) is outside the
// Terraform interval, so a benchmark counts it as Horizon's time.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

func main() {
	start := time.Now()
	self, err := os.Executable()
	if err != nil {
		fail(err)
	}
	dir := filepath.Dir(self)
	real, err := os.ReadFile(filepath.Join(dir, "real"))
	if err != nil {
		fail(err)
	}
	cmd := exec.Command(strings.TrimSpace(string(real)), os.Args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	childStart := time.Now()
	if err := cmd.Start(); err != nil {
		fail(err)
	}
	go func() {
		for s := range sigs {
			_ = cmd.Process.Signal(s) // the child may have exited meanwhile
		}
	}()
	err = cmd.Wait()
	childEnd := time.Now()
	code := 0
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			fail(err)
		}
		code = ee.ExitCode()
		if code < 0 {
			code = 1 // killed by a signal
		}
	}
	wd, _ := os.Getwd()
	cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	line := fmt.Sprintf("%s\t%s\t%d\t%d\t%d\t%d\t%d\n", wd, subcommand(os.Args[1:]), start.UnixNano(), childStart.UnixNano(),
		childEnd.UnixNano(), code, cpu.Nanoseconds())
	if f, err := os.OpenFile(filepath.Join(dir, "clock.log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644); err == nil {
		_, _ = f.WriteString(line) // one short write with O_APPEND: lines of concurrent runs do not interleave
		_ = f.Close()
	}
	os.Exit(code)
}

// subcommand is the command Terraform was asked to run: its first argument that is not a flag,
// with the next one for the commands that have subcommands (workspace, state).
func subcommand(args []string) string {
	var words []string
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			continue
		}
		words = append(words, a)
		if len(words) == 2 || (words[0] != "workspace" && words[0] != "state") {
			break
		}
	}
	return strings.Join(words, " ")
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "tfclock:", err)
	os.Exit(1)
}
