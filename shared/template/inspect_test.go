package template_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"horizon/shared/gitsource"
	"horizon/shared/template"
	"horizon/shared/testkit"
)

// exampleOnDisk puts the example's sources in two local repositories (k8s: jobs/master and
// jobs/worker on main; db: the db module at the root of release/1.x and actions/user on main)
// and points the example definition at them.
func exampleOnDisk(t testing.TB) (*template.Definition, *testkit.GitRepo, *testkit.GitRepo) {
	t.Helper()
	k8s := testkit.NewGitRepo(t)
	k8s.Commit(map[string]string{
		"jobs/master/main.tf":              masterTF,
		"jobs/master/scripts/bootstrap.sh": "#!/bin/sh\n",
		"jobs/master/scripts/drain.sh":     "#!/bin/sh\n",
		"jobs/master/scripts/renew.sh":     "#!/bin/sh\n",
		"jobs/worker/main.tf":              workerTF,
	})
	db := testkit.NewGitRepo(t)
	db.Commit(map[string]string{"actions/user/main.tf": userTF})
	db.Git("checkout", "--quiet", "-b", "release/1.x")
	db.Commit(map[string]string{"main.tf": dbTF})
	db.Git("checkout", "--quiet", "main")

	d := parseExample(t)
	for _, j := range d.Jobs() {
		j.Source.Repo = map[string]string{"master": k8s.URL, "worker": k8s.URL, "db": db.URL}[j.Name]
	}
	d.Actions[0].Source.Repo = db.URL
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	return d, k8s, db
}

func newGitCache(t testing.TB) *gitsource.Cache {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "cache")
	t.Cleanup(func() { chmodWritable(dir) })
	c, err := gitsource.New(gitsource.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// chmodWritable lets the test's cleanup remove read-only trees (which only root could).
func chmodWritable(dir string) {
	_ = filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err == nil && e.IsDir() {
			_ = os.Chmod(p, 0o755) // best effort: TempDir's removal reports what is left
		}
		return nil
	})
}

func TestInspect(t *testing.T) {
	t.Parallel()
	d, k8s, db := exampleOnDisk(t)
	c := newGitCache(t)
	mods, err := template.Inspect(context.Background(), d, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"master": k8s.Git("rev-parse", "main"),
		"worker": k8s.Git("rev-parse", "main"),
		"db":     db.Git("rev-parse", "release/1.x"),
	} {
		if m := mods.Jobs[name]; m == nil || m.Commit != want {
			t.Errorf("module of %s = %+v, want commit %s", name, m, want)
		}
	}
	if m := mods.Actions["create-db-user"]; m == nil || m.Variable("user") == nil {
		t.Errorf("module of create-db-user = %+v, want its variables", m)
	}
	// Two repositories, three distinct branches: k8s main (master and worker share it), db
	// release/1.x and db main. A repository's branches are listed, and fetched, together.
	if st := c.Stats(); st.Listings != 2 || st.Fetches != 2 {
		t.Errorf("cold inspection: got %+v, want 2 listings and 2 fetches", st)
	}
	if _, err := template.Inspect(context.Background(), d, c, nil); err != nil {
		t.Fatal(err)
	}
	if st := c.Stats(); st.Listings != 4 || st.Fetches != 2 {
		t.Errorf("after a warm inspection: got %+v, want 4 listings and still 2 fetches", st)
	}
}

func TestInspectReportsSourceProblemsAsFields(t *testing.T) {
	t.Parallel()
	d, k8s, _ := exampleOnDisk(t)
	d.Phases[0].Jobs[1].Source.Branch = "release/2.x"                                                   // db
	d.Actions[0].Source.Repo = "file://" + filepath.Join(t.TempDir(), "gone")                           // create-db-user
	d.Phases[1].Jobs[0].Source.Path = "jobs/wrker"                                                      // worker
	k8s.Commit(map[string]string{"jobs/master/scripts/drain.sh": "", "jobs/master/x.tf": "variable {"}) // master

	_, err := template.Inspect(context.Background(), d, newGitCache(t), nil)
	problems := fields(t, err)
	for _, want := range []struct{ field, msg string }{
		{"phases[0].jobs[1].source.branch", "branch not found"},
		{"actions[0].source.repo", "repository not found"},
		{"phases[1].jobs[0].source.path", "jobs/wrker at commit"},
		{"phases[0].jobs[0].source.path", "does not parse"},
	} {
		if !hasProblem(problems, want.field, want.msg) {
			t.Errorf("missing %s: %s\ngot %q", want.field, want.msg, problems)
		}
	}

	// Once the module parses again, the missing script is reported by CheckModules.
	k8s.Commit(map[string]string{"jobs/master/x.tf": ""})
	_, err = template.Inspect(context.Background(), d, newGitCache(t), nil)
	if problems := fields(t, err); !hasProblem(problems, "phases[0].jobs[0].cleanup[0].path", "scripts/drain.sh is not a file") {
		t.Errorf("got %q, want the missing cleanup script", problems)
	}
}

// Inspect never reads outside a tree, even for a definition that skipped Validate.
func TestInspectStaysInTheRepository(t *testing.T) {
	t.Parallel()
	d, _, _ := exampleOnDisk(t)
	d.Phases[1].Jobs[0].Source.Path = "../../../../etc"
	_, err := template.Inspect(context.Background(), d, newGitCache(t), nil)
	if problems := fields(t, err); !hasProblem(problems, "phases[1].jobs[0].source.path", "not a directory of the repository") {
		t.Fatalf("got %q, want the escaping path refused", problems)
	}
}

func TestInspectPassesOnOtherErrors(t *testing.T) {
	t.Parallel()
	d, _, _ := exampleOnDisk(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := template.Inspect(ctx, d, newGitCache(t), nil); err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Fatalf("got %v, want the context's error", err)
	}
}

// BenchmarkCreateVersion measures what creating a template version costs in git: Inspect of a
// 6-job template (resolve the branches of each repository, materialise the tree, inspect the module, find the
// scripts) on a cold cache and then on the same, warm cache. Six jobs live in three
// repositories and four branches. It reports both times, their ratio and the network
// operations of each.
func BenchmarkCreateVersion(b *testing.B) {
	var doc strings.Builder
	doc.WriteString("name: six\nphases:\n")
	repos := map[string]*testkit.GitRepo{}
	jobs := []struct{ name, repo, branch string }{
		{"a1", "a", "main"}, {"a2", "a", "main"}, {"a3", "a", "main"},
		{"b1", "b", "main"}, {"b2", "b", "release"}, {"c1", "c", "main"},
	}
	for _, name := range []string{"a", "b", "c"} {
		r := testkit.NewGitRepo(b)
		files := map[string]string{}
		for _, j := range jobs {
			if j.repo == name && j.branch == "main" {
				addJobFiles(files, j.name)
			}
		}
		r.Commit(files)
		repos[name] = r
	}
	repos["b"].Git("checkout", "--quiet", "-b", "release")
	files := map[string]string{}
	addJobFiles(files, "b2")
	repos["b"].Commit(files)
	for i, j := range jobs {
		fmt.Fprintf(&doc, "  - name: p%d\n    jobs:\n      - name: %s\n        machine: true\n", i, j.name)
		fmt.Fprintf(&doc, "        source: { repo: %q, branch: %s, path: jobs/%s }\n", repos[j.repo].URL, j.branch, j.name)
		doc.WriteString("        parameters: [ { name: cores, type: integer, default: 2 } ]\n")
		doc.WriteString("        scripts: [ { name: boot, path: boot.sh } ]\n")
	}
	d, err := template.Parse([]byte(doc.String()))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()

	var cold, warm time.Duration
	var coldStats, warmStats gitsource.Stats
	for b.Loop() {
		c := newGitCache(b)
		start := time.Now()
		if _, err := template.Inspect(ctx, d, c, nil); err != nil {
			b.Fatal(err)
		}
		cold += time.Since(start)
		coldStats = c.Stats()

		start = time.Now()
		if _, err := template.Inspect(ctx, d, c, nil); err != nil {
			b.Fatal(err)
		}
		warm += time.Since(start)
		after := c.Stats()
		warmStats = gitsource.Stats{Listings: after.Listings - coldStats.Listings, Fetches: after.Fetches - coldStats.Fetches}
	}
	// The floor of a warm Inspect: the listings alone, one git ls-remote per repository at once,
	// as Inspect lists them. A listing is the only way to see that a branch moved.
	var floor time.Duration
	for range b.N {
		start := time.Now()
		var wg sync.WaitGroup
		for _, r := range repos {
			wg.Go(func() {
				if out, err := exec.Command("git", "ls-remote", "--", r.URL, "refs/heads/main", "refs/heads/release").CombinedOutput(); err != nil {
					b.Errorf("ls-remote: %v: %s", err, out)
				}
			})
		}
		wg.Wait()
		floor += time.Since(start)
	}
	n := float64(b.N)
	coldMS, warmMS := float64(cold.Milliseconds())/n, float64(warm.Milliseconds())/n
	floorMS := float64(floor.Microseconds()) / 1000 / n
	b.ReportMetric(floorMS, "listings-floor-ms/op")
	b.Logf("the floor of a warm version, its 3 listings at once by bare git: %.1f ms; cold/floor %.2f, warm/floor %.2f",
		floorMS, float64(cold)/float64(floor), float64(warm)/float64(floor))
	b.ReportMetric(coldMS, "cold-ms/op")
	b.ReportMetric(warmMS, "warm-ms/op")
	b.ReportMetric(float64(cold)/float64(warm), "cold/warm")
	b.ReportMetric(float64(coldStats.Fetches), "cold-fetches")
	b.ReportMetric(float64(warmStats.Fetches), "warm-fetches")
	b.ReportMetric(float64(warmStats.Listings), "warm-listings")
	b.Logf("6 jobs, 3 repositories, 4 branches: cold %.1f ms (%d listings, %d fetches), warm %.1f ms (%d listings, %d fetches), cold/warm %.2f",
		coldMS, coldStats.Listings, coldStats.Fetches, warmMS, warmStats.Listings, warmStats.Fetches, float64(cold)/float64(warm))
}

func addJobFiles(files map[string]string, job string) {
	files["jobs/"+job+"/main.tf"] = `
variable "cores" { type = number }
variable "horizon_name" {}
variable "horizon_node" {}
output "ip" { value = "10.0.0.1" }
`
	files["jobs/"+job+"/boot.sh"] = "#!/bin/sh\necho boot\n"
}

// TestInspectAgainReadsEachCommitOnce: a second Inspect of the same commits gives the same
// modules (what a caller changes in the first answer does not reach the second), and a branch
// that moved is read at its new commit.
func TestInspectAgainReadsEachCommitOnce(t *testing.T) {
	t.Parallel()
	d, k8s, _ := exampleOnDisk(t)
	c := newGitCache(t)
	first, err := template.Inspect(context.Background(), d, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprint(*first.Jobs["worker"])
	first.Jobs["worker"].Variables[0].Name = "changed by the caller"
	first.Jobs["worker"].Outputs = nil
	again, err := template.Inspect(context.Background(), d, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(*again.Jobs["worker"]); got != want {
		t.Fatalf("the second Inspect gave\n%s\nwant\n%s", got, want)
	}
	k8s.Commit(map[string]string{"jobs/worker/main.tf": workerTF + "output \"added\" { value = 1 }\n"})
	moved, err := template.Inspect(context.Background(), d, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	w := moved.Jobs["worker"]
	if w.Commit != k8s.Git("rev-parse", "main") || !strings.Contains(fmt.Sprint(w.Outputs), "added") {
		t.Fatalf("after the branch moved: commit %s, outputs %v", w.Commit, w.Outputs)
	}
}
