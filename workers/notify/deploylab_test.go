package notify_test

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"

	"horizon/functions/apitest"
	"horizon/functions/apitest/labtest"
	"horizon/shared/notify"
	"horizon/shared/testkit"
	"horizon/workers/worker/workertest"
)

// deployLab is a lab (labtest) with running workers that deliver webhooks to loopback, and a
// template of one job that is not a machine (a terraform_data): its deploys take a fraction of
// a second and no node's gate, so that many run at once and what a test sees is the
// notifications' effect on them. attemptTimeout bounds a delivery's attempt (0: the harness's).
type deployLab struct {
	*labtest.Lab
	tmpl string
}

func newDeployLab(t testing.TB, attemptTimeout time.Duration) *deployLab {
	t.Helper()
	guard := notify.Guard{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}
	l := &deployLab{Lab: labtest.New(t, labtest.Options{API: &apitest.Options{Webhooks: guard}})}
	d := l.API.Deps
	workertest.Start(t, workertest.Deps{DB: d.DB, Redis: d.Redis, Box: d.Box, Namespace: d.Namespace},
		workertest.Options{Webhooks: guard, WebhookTimeout: attemptTimeout, OutboxSweep: true})
	repo := testkit.NewGitRepo(t)
	repo.Commit(map[string]string{"jobs/step/main.tf": `resource "terraform_data" "step" {}`})
	r := l.API.Do("POST", "/v1/templates", apitest.Req{Body: map[string]any{"definition": `name: notified
phases:
  - name: one
    jobs:
      - name: step
        source: { repo: ` + repo.URL + `, branch: main, path: jobs/step }
`}})
	if r.Status != 201 {
		t.Fatalf("template: %d %s", r.Status, r.Body)
	}
	l.tmpl = r.Map()["id"].(string)
	return l
}

// subscribe makes an enabled subscription to run results at url: of the lab's team, or, when
// global, an admin's for every team.
func (l *deployLab) subscribe(t testing.TB, name, url string, global bool) string {
	t.Helper()
	body := map[string]any{"name": name, "kind": "standard", "url": url, "events": []string{"run.finished"}, "enabled": true}
	token := "" // the admin's
	if !global {
		body["team_id"], token = l.Team, l.Member
	}
	r := l.API.Do("POST", "/v1/webhooks", apitest.Req{Token: token, Body: body})
	if r.Status != 201 {
		t.Fatalf("subscribe: %d %s", r.Status, r.Body)
	}
	return r.Map()["id"].(string)
}

// stacks drafts n stacks named prefix-0… and returns their ids.
func (l *deployLab) stacks(t testing.TB, prefix string, n int) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range n {
		r := l.API.Do("POST", "/v1/stacks", apitest.Req{Token: l.Member, Body: map[string]any{"team_id": l.Team,
			"name": fmt.Sprintf("%s-%d", prefix, i), "environment_id": l.Env, "template_id": l.tmpl, "template_version": 1,
			"jobs": map[string]any{"step": map[string]any{"executions": []any{map[string]any{}}}}}})
		if r.Status != 201 {
			t.Fatalf("stack: %d %s", r.Status, r.Body)
		}
		ids[i] = r.Map()["id"].(string)
	}
	return ids
}

// deploy deploys the stacks at once and waits until every one is deployed; it returns their
// runs' ids.
func (l *deployLab) deploy(t testing.TB, ids []string, within time.Duration) []string {
	t.Helper()
	runs := make([]string, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() {
			r := l.API.Do("POST", "/v1/stacks/"+id+"/deploy", apitest.Req{Token: l.Member})
			if r.Status != 202 {
				t.Errorf("deploy: %d %s", r.Status, r.Body)
				return
			}
			runs[i] = r.Map()["id"].(string)
		})
	}
	wg.Wait()
	var deployed int
	testkit.Eventually(t, within, "the deploys did not end", func() bool {
		_ = l.API.DB.QueryRow(context.Background(), `SELECT count(*) FROM stacks WHERE id = ANY($1) AND state = 'deployed'`, ids).Scan(&deployed)
		return deployed == len(ids)
	})
	return runs
}
