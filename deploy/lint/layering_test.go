package lint

import (
	"os/exec"
	"path"
	"strings"
	"testing"
)

// TestLayering checks the import graph of the module's non-test code:
//   - shared/ is what both processes build on, so it never imports functions/ or workers/;
//   - the API and the workers meet only in shared/: neither imports the other;
//   - test helpers (testkit and packages named …test, such as apitest) start real services and
//     take shortcuts that production code must not, so only tests and other helpers import them.
func TestLayering(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "horizon/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var checked int
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg, imports := fields[0], fields[1:]
		for _, imp := range imports {
			if !strings.HasPrefix(imp, "horizon/") {
				continue
			}
			checked++
			if why := forbidden(pkg, imp); why != "" {
				t.Errorf("%s imports %s: %s", pkg, imp, why)
			}
		}
	}
	if checked == 0 {
		t.Fatal("go list found no import between the module's packages")
	}
}

func forbidden(pkg, imp string) string {
	switch {
	case under(pkg, "horizon/shared") && (under(imp, "horizon/functions") || under(imp, "horizon/workers")):
		return "shared/ must not depend on the API or the workers"
	case under(pkg, "horizon/functions") && under(imp, "horizon/workers"):
		return "the API must not depend on the workers (share through shared/)"
	case under(pkg, "horizon/workers") && under(imp, "horizon/functions"):
		return "the workers must not depend on the API (share through shared/)"
	case isTestHelper(imp) && !isTestHelper(pkg):
		return "test helpers are for tests only"
	}
	return ""
}

func under(pkg, root string) bool { return pkg == root || strings.HasPrefix(pkg, root+"/") }

func isTestHelper(pkg string) bool {
	name := path.Base(pkg)
	return name == "testkit" || strings.HasSuffix(name, "test")
}

func TestForbidden(t *testing.T) {
	for _, c := range []struct {
		pkg, imp string
		bad      bool
	}{
		{"horizon/shared/store", "horizon/functions/api", true},
		{"horizon/shared/store", "horizon/workers/steps", true},
		{"horizon/functions/stacks", "horizon/workers/steps", true},
		{"horizon/workers/steps", "horizon/functions/api", true},
		{"horizon/workers/steps", "horizon/shared/testkit", true},
		{"horizon/deploy/bench", "horizon/functions/apitest", true},
		{"horizon/functions/apitest", "horizon/shared/testkit", false},
		{"horizon/functions/stacks", "horizon/shared/store", false},
		{"horizon/workers/steps", "horizon/shared/gate", false},
		{"horizon/sharedx/a", "horizon/functions/api", false},
	} {
		if got := forbidden(c.pkg, c.imp) != ""; got != c.bad {
			t.Errorf("forbidden(%s, %s) = %v, want %v", c.pkg, c.imp, got, c.bad)
		}
	}
}
