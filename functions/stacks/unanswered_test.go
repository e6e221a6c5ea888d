package stacks_test

import (
	"strings"
	"testing"

	"horizon/functions/apitest"
	"horizon/functions/apitest/labtest"
)

// TestADeployWhoseClusterDoesNotAnswerIsA503: the deploy's preflight asks the cluster for its
// nodes and VMs; when nothing answers, the deploy is a dependency down — 503 problem+json with
// Retry-After, naming the server — not a 4xx blaming the request, and nothing was started.
func TestADeployWhoseClusterDoesNotAnswerIsA503(t *testing.T) {
	t.Parallel()
	l := labtest.New(t, labtest.Options{})
	stack := l.Draft("shop", 1)
	before := l.API.State()
	if err := l.Sandbox.Close(); err != nil {
		t.Fatal(err)
	}
	r := l.API.Do("POST", "/v1/stacks/"+stack+"/deploy", apitest.Req{Token: l.Member})
	if r.Status != 503 || r.Header.Get("Retry-After") == "" || !strings.Contains(r.Map()["detail"].(string), "sandbox") {
		t.Fatalf("deploy with the cluster down: %d %s (Retry-After %q), want 503 naming the server", r.Status, r.Body, r.Header.Get("Retry-After"))
	}
	if after := l.API.State(); after != before {
		t.Fatalf("the refused deploy changed the database:\n%s\nwant\n%s", after, before)
	}
}
