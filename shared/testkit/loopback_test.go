package testkit_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"horizon/shared/testkit"
)

// TestLoopbackNetIsHeldUntilTheTestEnds: a reserved prefix is locked against every other
// process while the test runs, and never handed out twice at once.
func TestLoopbackNetIsHeldUntilTheTestEnds(t *testing.T) {
	seen := map[string]bool{}
	for range 50 {
		p := testkit.LoopbackNet(t)
		if seen[p] {
			t.Fatalf("%s reserved twice", p)
		}
		seen[p] = true
		f, err := os.Open(filepath.Join(os.TempDir(), "horizon-loopback", p))
		if err != nil {
			t.Fatal(err)
		}
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		f.Close()
		if err == nil {
			t.Fatalf("%s is not locked while reserved", p)
		}
	}
}
