package worker_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"horizon/shared/queue"
	"horizon/shared/testkit"
	"horizon/workers/worker/workertest"
)

// A template version is prepared on every worker host when it is published, before any deploy:
// each host checks its modules out and initialises them (one seed per module and commit), so
// the version's first builds wait for neither. Announcements a worker cannot use (not JSON, a
// version that does not exist) cost a log line and stop nothing.
func TestAPublishedVersionIsPreparedOnEveryWorkerHost(t *testing.T) {
	e := newEngine(t, engineOpts{})
	d := e.API.Deps
	otherHost := t.TempDir()
	workertest.Start(t, workertest.Deps{DB: d.DB, Redis: d.Redis, Box: d.Box, Namespace: d.Namespace}, workertest.Options{WorkRoot: otherHost})
	ctx := context.Background()
	channel := queue.PublishedChannel(d.Namespace)
	testkit.Eventually(t, 30*time.Second, "both workers listen for publications", func() bool {
		n, err := d.Redis.PubSubNumSub(ctx, channel).Result()
		return err == nil && n[channel] == 2
	})
	for _, junk := range []string{"not json", `{"template_id":"` + uuid.NewString() + `","version":1}`} {
		if err := d.Redis.Publish(ctx, channel, junk).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(seeds(t, e.workRoot)) + len(seeds(t, otherHost)); n != 0 {
		t.Fatalf("%d seeds before any publication", n)
	}

	// Two jobs of one module at one commit: one seed per host.
	e.publishFiles(phasesTemplate(2), map[string]string{"jobs/step/main.tf": stepModule})
	for _, host := range []string{e.workRoot, otherHost} {
		testkit.Eventually(t, 2*time.Minute, "the published version's module is initialised on "+host, func() bool {
			return len(seeds(t, host)) == 1
		})
	}
}

// seeds lists the complete seeds of a worker host's Terraform work root.
func seeds(t testing.TB, workRoot string) []string {
	entries, err := os.ReadDir(filepath.Join(workRoot, ".seeds"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, en := range entries {
		if en.IsDir() && !strings.HasPrefix(en.Name(), "tmp-") {
			out = append(out, en.Name())
		}
	}
	return out
}
