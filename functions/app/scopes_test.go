package app_test

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/google/uuid"

	"horizon/functions/apitest"
	"horizon/openapi"
	"horizon/shared/auth"
)

// TestTokenScopesAgainstEveryRoute sweeps every /v1 operation of openapi.yaml with a token of
// each limited scope, minted by an admin (so that the role never refuses): where the
// operation's x-scope is not opened by the token's scope the answer is 403 forbidden — never
// a 2xx, nothing done —, and where it is, the scope is not what refuses it. Together they prove
// that the route table and the document declare the same scope for every route.
func TestTokenScopesAgainstEveryRoute(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, nil)
	tokens := map[auth.TokenScope]string{}
	for _, scope := range auth.TokenScopes() {
		if scope == auth.TokenFull {
			continue
		}
		r := s.Do("POST", "/v1/tokens", apitest.Req{Body: map[string]any{"name": "bot-" + string(scope), "scope": scope}})
		if r.Status != 201 || r.Map()["scope"] != string(scope) {
			t.Fatalf("mint a %s token: %d %s", scope, r.Status, r.Body)
		}
		tokens[scope] = r.Map()["token"].(string)
	}
	// Each token is used once first, so that recording its first use is not taken for a write.
	for _, tok := range tokens {
		s.Do("GET", "/v1/prometheus/targets", apitest.Req{Token: tok})
	}
	var calls []call
	for _, o := range operations(t) {
		calls = append(calls, o.call(""))
	}
	send := func(c call, tok string) (*apitest.Response, apitest.Problem) { return c.send(s, tok) }
	// The refusals first: together they must leave the database as it was.
	before := s.State()
	refused, opened := 0, 0
	for _, c := range calls {
		for scope, tok := range tokens {
			if scope.Opens(c.need) {
				continue
			}
			refused++
			if got, prob := send(c, tok); got.Status != 403 || prob.Type != "urn:horizon:problem:forbidden" {
				t.Errorf("%s %s (x-scope %s) with a %s token: %d %.200s, want 403", c.method, c.target, c.need, scope, got.Status, got.Body)
			}
		}
	}
	if after := s.State(); after != before {
		t.Errorf("the refused requests changed the database:\n%s", after)
	}
	for _, c := range calls {
		for scope, tok := range tokens {
			if !scope.Opens(c.need) {
				continue
			}
			opened++
			if got, prob := send(c, tok); got.Status == 403 && strings.Contains(prob.Detail, "scope") {
				t.Errorf("%s %s (x-scope %s) with a %s token: refused by scope: %s", c.method, c.target, c.need, scope, got.Body)
			}
		}
	}
	if refused < 100 || opened < 100 {
		t.Fatalf("only %d refusals and %d openings checked", refused, opened)
	}
}

// operation is one /v1 operation of openapi.yaml that takes a bearer token: the sweeps of the
// token scopes and of the roles go through every one.
type operation struct {
	op           *openapi3.Operation
	method, path string // the path as the document writes it: /v1/stacks/{id}
	need         auth.TokenScope
}

// operations lists every /v1 operation of openapi.yaml but the two whose code is the proof
// (setup, sign-in), each with the scope its x-scope declares.
func operations(t *testing.T) []operation {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(openapi.Spec)
	if err != nil {
		t.Fatal(err)
	}
	var ops []operation
	for path, item := range doc.Paths.Map() {
		if !strings.HasPrefix(path, "/v1/") || path == "/v1/setup" || path == "/v1/sign-in" {
			continue
		}
		for method, op := range item.Operations() {
			raw, _ := op.Extensions["x-scope"].(string)
			need := auth.TokenScope(raw)
			if !need.Valid() {
				t.Errorf("%s %s declares x-scope %q, want one of %v", method, path, raw, auth.TokenScopes())
				continue
			}
			ops = append(ops, operation{op, method, path, need})
		}
	}
	return ops
}

// call is one request of a sweep.
type call struct {
	operation
	target string // the path with its parameters filled in
	body   any
}

var pathParam = regexp.MustCompile(`\{[a-z_]+\}`)

// call fills o's path: {id} with id, or like every other parameter with a fresh UUID (an
// unknown object, which an opened route mostly answers 404 or 422). A POST or PATCH sends {}.
func (o operation) call(id string) call {
	c := call{operation: o}
	c.target = pathParam.ReplaceAllStringFunc(o.path, func(p string) string {
		if p == "{id}" && id != "" {
			return id
		}
		return uuid.NewString()
	})
	if o.method == "POST" || o.method == "PATCH" {
		c.body = map[string]any{}
	}
	return c
}

// send sends c with tok and returns the answer and its problem (empty for a non-problem).
func (c call) send(s *apitest.Server, tok string) (*apitest.Response, apitest.Problem) {
	got := do(s, c.op, c.method, c.target, apitest.Req{Token: tok, Body: c.body})
	var prob apitest.Problem
	_ = json.Unmarshal(got.Body, &prob) // checked against the document already; a non-problem leaves it empty
	return got, prob
}

// do sends one request of the sweep; an event stream that opens is closed at once.
func do(s *apitest.Server, op *openapi3.Operation, method, path string, r apitest.Req) *apitest.Response {
	if ok := op.Responses.Status(200); ok != nil && ok.Value != nil && ok.Value.Content.Get("text/event-stream") != nil && method == "GET" {
		st := s.Stream(path, r)
		defer st.Close()
		return &apitest.Response{Status: st.Status, Header: st.Header, Body: st.Body}
	}
	return s.Do(method, path, r)
}

// TestScopeNeverWidensTheRole: a viewer's deploy token cannot deploy, a member's read token
// cannot create a stack in their own team, although the scope or the role alone would allow it.
func TestScopeNeverWidensTheRole(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, nil)
	team := s.NewTeam("red")
	stack := s.NewStack(team, "web")
	_, viewer := s.NewUser(auth.RoleViewer, team)
	_, member := s.NewUser(auth.RoleMember, team)
	mint := func(owner, scope string) string {
		t.Helper()
		r := s.Do("POST", "/v1/tokens", apitest.Req{Token: owner, Body: map[string]any{"name": "bot", "scope": scope}})
		if r.Status != 201 {
			t.Fatalf("mint %s: %d %s", scope, r.Status, r.Body)
		}
		return r.Map()["token"].(string)
	}
	viewerDeploy, memberRead, memberDeploy := mint(viewer, "deploy"), mint(member, "read"), mint(member, "deploy")
	if r := s.Do("POST", "/v1/stacks/"+stack.String()+"/deploy", apitest.Req{Token: viewerDeploy, Body: map[string]any{}}); r.Status != 403 {
		t.Errorf("a viewer's deploy token deploys: %d %s, want 403", r.Status, r.Body)
	}
	if r := s.Do("POST", "/v1/stacks/"+stack.String()+"/cancel", apitest.Req{Token: memberRead, Body: map[string]any{}}); r.Status != 403 {
		t.Errorf("a member's read token cancels: %d %s, want 403", r.Status, r.Body)
	}
	if r := s.Do("DELETE", "/v1/stacks/"+stack.String(), apitest.Req{Token: memberDeploy}); r.Status != 403 {
		t.Errorf("a member's deploy token removes a stack: %d %s, want 403", r.Status, r.Body)
	}
	if r := s.Do("GET", "/v1/stacks/"+stack.String(), apitest.Req{Token: memberRead}); r.Status != 200 {
		t.Errorf("a member's read token reads its team's stack: %d %s, want 200", r.Status, r.Body)
	}
	other := s.NewStack(s.NewTeam("blue"), "db")
	if r := s.Do("GET", "/v1/stacks/"+other.String(), apitest.Req{Token: memberDeploy}); r.Status != 404 {
		t.Errorf("a member's deploy token reads another team's stack: %d, want 404", r.Status)
	}
}
