package api

import (
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"horizon/openapi"
)

// nonIDParams are the path parameters that are names and numbers, not object ids: Handle
// leaves them to the handler (c.Params).
var nonIDParams = map[string]bool{"job": true, "n": true, "name": true, "v": true}

// TestEveryPathIDIsParsed: every path parameter of openapi.yaml is {id}, one of subIDs (which
// Handle parses into Req.Sub) or one of nonIDParams, and none declared a UUID is a non-id — so
// a route with a new id parameter fails here until Handle parses it, instead of handing its
// handler uuid.Nil. A path names at most one sub-object.
func TestEveryPathIDIsParsed(t *testing.T) {
	t.Parallel()
	doc, err := openapi3.NewLoader().LoadFromData(openapi.Spec)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	for path, item := range doc.Paths.Map() {
		params := item.Parameters
		for _, op := range item.Operations() {
			params = append(params, op.Parameters...)
		}
		subs := map[string]bool{}
		for _, ref := range params {
			p := ref.Value
			if p == nil || p.In != openapi3.ParameterInPath {
				continue
			}
			uuidTyped := p.Schema != nil && p.Schema.Value != nil && p.Schema.Value.Format == "uuid"
			switch {
			case p.Name == "id":
			case subIDs[p.Name]:
				subs[p.Name] = true
			case nonIDParams[p.Name] && !uuidTyped:
			case nonIDParams[p.Name]:
				t.Errorf("%s: {%s} is a UUID: add it to subIDs (handle.go), not to nonIDParams", path, p.Name)
			default:
				t.Errorf("%s: path parameter {%s} is neither id, a sub-object id Handle parses (subIDs) nor a known name or number", path, p.Name)
			}
		}
		if len(subs) > 1 {
			t.Errorf("%s names %d sub-objects (%v): Req.Sub holds one", path, len(subs), subs)
		}
	}
}
