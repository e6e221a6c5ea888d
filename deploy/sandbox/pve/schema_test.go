package pve

import (
	"encoding/json"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// The official PVE API schema: testdata/apidata.json is pve-docs' api-viewer/apidata.js
// (version 9.1.3, commit e5010dce) turned into plain JSON; testdata/README.md says where it
// comes from and under which licence. A missing schema fails the tests rather than skipping
// them.

type schemaNode struct {
	Path     string                  `json:"path"`
	Info     map[string]schemaMethod `json:"info"`
	Children []schemaNode            `json:"children"`
}

type schemaMethod struct {
	Permissions json.RawMessage `json:"permissions"`
	Parameters  struct {
		Properties map[string]schemaProp `json:"properties"`
	} `json:"parameters"`
	Returns schemaProp `json:"returns"`
}

type schemaProp struct {
	Type                 string                `json:"type"`
	Description          string                `json:"description"`
	Properties           map[string]schemaProp `json:"properties"`
	Items                *schemaProp           `json:"items"`
	AdditionalProperties any                   `json:"additionalProperties"`
}

var (
	schemaOnce  sync.Once
	schemaPaths map[string]map[string]schemaMethod
	schemaErr   error
)

// loadSchema returns path template → method → definition.
func loadSchema(t testing.TB) map[string]map[string]schemaMethod {
	t.Helper()
	schemaOnce.Do(func() {
		var data []byte
		if data, schemaErr = os.ReadFile(schemaFile); schemaErr != nil {
			return
		}
		var roots []schemaNode
		if schemaErr = json.Unmarshal(data, &roots); schemaErr != nil {
			return
		}
		schemaPaths = map[string]map[string]schemaMethod{}
		var walk func(n schemaNode)
		walk = func(n schemaNode) {
			schemaPaths[n.Path] = n.Info
			for _, c := range n.Children {
				walk(c)
			}
		}
		for _, r := range roots {
			walk(r)
		}
	})
	if schemaErr != nil {
		t.Fatalf("PVE API schema: %v", schemaErr)
	}
	return schemaPaths
}

// schemaFile is relative to the package directory, where go test runs.
const schemaFile = "testdata/apidata.json"

// schemaPattern turns a route pattern into the schema's path template.
func schemaPattern(pattern string) string { return strings.ReplaceAll(pattern, "...}", "}") }

var indexRangeRE = regexp.MustCompile(`n is 0 to (\d+)`)

// TestRoutesExistInSchema checks that every route the sandbox serves is PVE's, with the same
// method, and that every parameter it accepts (path variables included) is one PVE declares
// for that route — so the sandbox never invents API.
func TestRoutesExistInSchema(t *testing.T) {
	t.Parallel()
	schema := loadSchema(t)
	e := newEnv(t, nil)
	if len(e.c.routes) < 30 {
		t.Fatalf("only %d routes: the route table did not load", len(e.c.routes))
	}
	for _, rt := range e.c.routes {
		path := schemaPattern(rt.pattern)
		methods, ok := schema[path]
		if !ok {
			t.Errorf("%s: path not in the PVE schema", rt.key())
			continue
		}
		def, ok := methods[rt.method]
		if !ok {
			t.Errorf("%s: PVE has no %s on this path", rt.key(), rt.method)
			continue
		}
		props := def.Parameters.Properties
		names := append([]string(nil), rt.params...)
		for _, seg := range strings.Split(path, "/") {
			if v, ok := strings.CutPrefix(seg, "{"); ok {
				names = append(names, strings.TrimSuffix(v, "}"))
			}
		}
		for _, name := range names {
			prop, ok := props[name]
			if !ok {
				t.Errorf("%s: parameter %q is not in the PVE schema", rt.key(), name)
				continue
			}
			prefix, indexed := strings.CutSuffix(name, "[n]")
			if !indexed {
				continue
			}
			if m := indexRangeRE.FindStringSubmatch(prop.Description); m != nil {
				limit, _ := strconv.Atoi(m[1])
				if indexedMax[prefix] > limit {
					t.Errorf("%s: %s accepts up to index %d, PVE up to %d", rt.key(), name, indexedMax[prefix], limit)
				}
			} else if _, ok := indexedMax[prefix]; !ok {
				t.Errorf("%s: %s has no index limit", rt.key(), name)
			}
		}
	}
}

// TestVMKeysExistInSchema checks the VM config key table against qemu create and config.
func TestVMKeysExistInSchema(t *testing.T) {
	t.Parallel()
	schema := loadSchema(t)
	for _, path := range []string{"/nodes/{node}/qemu", "/nodes/{node}/qemu/{vmid}/config"} {
		props := schema[path]["POST"].Parameters.Properties
		for name := range vmKeys {
			if _, ok := props[name]; !ok {
				t.Errorf("VM key %q is not a parameter of POST %s", name, path)
			}
		}
	}
	returned := schema["/nodes/{node}/qemu/{vmid}/config"]["GET"].Returns.Properties
	for name := range vmKeys {
		if _, ok := returned[name]; !ok {
			t.Errorf("VM key %q is not returned by GET config", name)
		}
	}
}

// TestRoutePermissionsAreTheSchemas checks that every served route enforces the permissions
// object the PVE schema states for it, word for word, and that every "check" is one the
// evaluator understands.
func TestRoutePermissionsAreTheSchemas(t *testing.T) {
	t.Parallel()
	schema := loadSchema(t)
	e := newEnv(t, nil)
	for _, rt := range e.c.routes {
		text, ok := routePermissions[rt.key()]
		if !ok {
			t.Errorf("%s: no permissions: the route is served unchecked", rt.key())
			continue
		}
		var ours, theirs any
		if err := json.Unmarshal([]byte(text), &ours); err != nil {
			t.Fatalf("%s: %v", rt.key(), err)
		}
		def := schema[schemaPattern(rt.pattern)][rt.method]
		if err := json.Unmarshal(def.Permissions, &theirs); err != nil {
			t.Fatalf("%s: the schema's permissions: %v", rt.key(), err)
		}
		if !reflect.DeepEqual(ours, theirs) {
			t.Errorf("%s: permissions\n%s\nthe schema's\n%s", rt.key(), text, def.Permissions)
		}
		checkUnderstood(t, rt.key(), routeChecks[rt.key()].Check)
	}
	if len(routePermissions) != len(e.c.routes) {
		t.Errorf("%d permissions for %d routes: one names no served route", len(routePermissions), len(e.c.routes))
	}
}

func checkUnderstood(t *testing.T, key string, expr []any) {
	t.Helper()
	if len(expr) == 0 {
		return
	}
	switch expr[0] {
	case "and", "or":
		for _, sub := range expr[1:] {
			checkUnderstood(t, key, sub.([]any))
		}
	case "perm":
		for i := 3; i < len(expr); i += 2 {
			if o := expr[i]; o != "any" && o != "require_param" {
				t.Errorf("%s: perm option %v not understood", key, o)
			}
		}
	default:
		t.Errorf("%s: check %v not understood", key, expr[0])
	}
}
