package testkit

import (
	"crypto/rand"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"testing"

	"horizon/shared/flock"
)

// LoopbackNet reserves a /24 of loopback addresses, 127.A.B.0/24 with A in 20–219, for the
// test's machines and returns its prefix "127.A.B". Sandbox VMs listen for SSH on their own
// address, so two tests whose networks overlapped would fight over a port; the reservation is
// a file lock, so it holds across the test binaries that run at once, and it is released when
// the test ends (or its process dies).
func LoopbackNet(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(os.TempDir(), "horizon-loopback")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for range 100 {
		a, _ := rand.Int(rand.Reader, big.NewInt(200))
		b, _ := rand.Int(rand.Reader, big.NewInt(250))
		prefix := fmt.Sprintf("127.%d.%d", 20+a.Int64(), 1+b.Int64())
		l, ok, err := flock.Try(filepath.Join(dir, prefix))
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			continue // taken by a test running now: draw again
		}
		t.Cleanup(l.Release)
		return prefix
	}
	t.Fatal("no free loopback /24 after 100 draws")
	return ""
}
