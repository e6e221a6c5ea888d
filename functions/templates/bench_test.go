package templates_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"horizon/functions/apitest"
	"horizon/shared/testkit"
)

// sixJobs publishes six job modules in three new repositories (four branches) and returns a
// definition over them: every call is cold for the API's git cache.
func sixJobs(b *testing.B, name string) string {
	b.Helper()
	jobs := []struct{ name, repo, branch string }{
		{"a1", "a", "main"}, {"a2", "a", "main"}, {"a3", "a", "main"},
		{"b1", "b", "main"}, {"b2", "b", "release"}, {"c1", "c", "main"},
	}
	module := func(files map[string]string, job string) {
		files["jobs/"+job+"/main.tf"] = webTF
		files["jobs/"+job+"/scripts/setup.sh"] = "#!/bin/sh\necho token=x >> \"$HORIZON_SECRET_OUTPUT\"\n"
	}
	repos := map[string]*testkit.GitRepo{}
	for _, r := range []string{"a", "b", "c"} {
		files := map[string]string{}
		for _, j := range jobs {
			if j.repo == r && j.branch == "main" {
				module(files, j.name)
			}
		}
		repos[r] = testkit.NewGitRepo(b)
		repos[r].Commit(files)
	}
	repos["b"].Git("checkout", "--quiet", "-b", "release")
	files := map[string]string{}
	module(files, "b2")
	repos["b"].Commit(files)

	var doc strings.Builder
	fmt.Fprintf(&doc, "name: %s\nphases:\n", name)
	for i, j := range jobs {
		fmt.Fprintf(&doc, "  - name: p%d\n    jobs:\n      - name: %s\n        machine: true\n", i, j.name)
		fmt.Fprintf(&doc, "        source: { repo: %q, branch: %s, path: jobs/%s }\n", repos[j.repo].URL, j.branch, j.name)
		doc.WriteString("        parameters:\n          - { name: cores, type: integer, default: 2 }\n")
		doc.WriteString("          - { name: admin_password, type: string, secret: true, generate: true }\n")
		doc.WriteString("        outputs: [ { name: token, secret: true } ]\n")
		doc.WriteString("        scripts: [ { name: setup, path: scripts/setup.sh } ]\n")
	}
	return doc.String()
}

// BenchmarkCreateVersionOverHTTP measures what uploading a 6-job template costs through the
// API: POST /v1/templates on a cold git cache (its repositories never seen: clone, fetch,
// check out, inspect), then POST /v1/templates/{id}/versions of the same definition on the now
// warm cache, which must not fetch again (one ref listing per branch only). It reports both
// times, their ratio and the fetches of each.
//
//	go test -run '^$' -bench CreateVersionOverHTTP -benchtime 10x ./functions/templates/
func BenchmarkCreateVersionOverHTTP(b *testing.B) {
	s := apitest.New(b, nil)
	var cold, warm time.Duration
	var coldFetches, warmFetches, warmListings int64
	i := 0
	for b.Loop() {
		b.StopTimer()
		doc := sixJobs(b, fmt.Sprintf("six-%d", i))
		i++
		b.StartTimer()

		before := s.Deps.Git.Stats()
		start := time.Now()
		created := post(b, s, "/v1/templates", doc)
		cold += time.Since(start)
		mid := s.Deps.Git.Stats()

		start = time.Now()
		post(b, s, "/v1/templates/"+created["id"].(string)+"/versions", doc)
		warm += time.Since(start)
		after := s.Deps.Git.Stats()
		coldFetches += mid.Fetches - before.Fetches
		warmFetches += after.Fetches - mid.Fetches
		warmListings += after.Listings - mid.Listings
	}
	if warmFetches != 0 {
		b.Fatalf("the warm uploads fetched %d times, want 0", warmFetches)
	}
	n := float64(b.N)
	coldMS, warmMS := cold.Seconds()*1000/n, warm.Seconds()*1000/n
	b.ReportMetric(coldMS, "cold-ms/op")
	b.ReportMetric(warmMS, "warm-ms/op")
	b.ReportMetric(float64(cold)/float64(warm), "cold/warm")
	b.ReportMetric(float64(coldFetches)/n, "cold-fetches/op")
	b.ReportMetric(float64(warmFetches)/n, "warm-fetches/op")
	b.ReportMetric(float64(warmListings)/n, "warm-listings/op")
	b.Logf("6 jobs, 3 repositories, 4 branches, over HTTP: cold %.1f ms (%.0f fetches), warm %.1f ms (%.0f fetches, %.0f listings), cold/warm %.2f",
		coldMS, float64(coldFetches)/n, warmMS, float64(warmFetches)/n, float64(warmListings)/n, float64(cold)/float64(warm))
}

// post sends a definition with a plain HTTP client (apitest's contract check would be timed
// too) and fails unless it is created.
func post(b *testing.B, s *apitest.Server, path, doc string) map[string]any {
	b.Helper()
	body, _ := json.Marshal(map[string]any{"definition": doc})
	req, err := http.NewRequest("POST", s.URL+path, bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+s.Admin)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer res.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil || res.StatusCode != 201 {
		b.Fatalf("POST %s: %d %v %v", path, res.StatusCode, out, err)
	}
	return out
}
