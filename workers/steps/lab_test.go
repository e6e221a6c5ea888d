package steps_test

import (
	"testing"

	"horizon/functions/apitest/labtest"
	"horizon/workers/worker/workertest"
)

// kindsLab is a lab (labtest: the API, the Proxmox sandbox, a team, the sandbox-vm template)
// with workertest.Kinds on its database, Redis namespace and secret box: the seed these tests
// start from. The API writes runs as users start them; the tests run their tasks themselves.
// (workertest cannot build it: the workers' packages may not import the API's.)
func kindsLab(t *testing.T, lo labtest.Options) (*labtest.Lab, *workertest.Kinds) {
	t.Helper()
	lab := labtest.New(t, lo)
	d := lab.API.Deps
	return lab, workertest.NewKinds(t, workertest.Deps{DB: d.DB, Redis: d.Redis, Box: d.Box, Namespace: d.Namespace}, workertest.Options{})
}
