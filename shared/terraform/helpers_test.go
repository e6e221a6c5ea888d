package terraform_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"horizon/shared/terraform"
)

// realBinary returns the terraform or tofu the real-run tests use (HORIZON_TERRAFORM_BIN, or
// PATH). They fail rather than skip without one: deploy/tools/ensure-terraform.sh provides it.
func realBinary(t testing.TB) terraform.Binary {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := terraform.FindBinary(ctx, os.Getenv("HORIZON_TERRAFORM_BIN"))
	if err != nil {
		t.Fatalf("find terraform: %v", err)
	}
	return b
}

// lines collects what a Sink receives.
type lines struct {
	mu  sync.Mutex
	all []string
	// onLine, when set, is called with each line (outside the lock).
	onLine func(string)
}

func (l *lines) sink(stream terraform.Stream, line string) {
	l.mu.Lock()
	l.all = append(l.all, string(stream)+": "+line)
	f := l.onLine
	l.mu.Unlock()
	if f != nil {
		f(line)
	}
}

func (l *lines) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.all, "\n")
}

// checkout returns the read-only source tree of a test module under testdata/modules.
func checkout(t testing.TB, name string) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("testdata", "modules", name))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func closeWorkdir(t testing.TB, w *terraform.Workdir) {
	t.Helper()
	if err := w.Close(); err != nil {
		t.Errorf("close work dir: %v", err)
	}
	if _, err := os.Stat(w.Dir()); !os.IsNotExist(err) {
		t.Errorf("work dir %s still exists after Close", w.Dir())
	}
}
