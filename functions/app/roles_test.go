package app_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"strings"
	"testing"

	"github.com/google/uuid"
	"golang.org/x/crypto/ssh"

	"horizon/functions/api"
	"horizon/functions/apitest"
	"horizon/functions/app"
	"horizon/shared/auth"
)

// TestRolesAgainstEveryRoute sweeps every /v1 operation of openapi.yaml with an admin, a member
// and a viewer of one team and a member of another, all with full-scope tokens, and checks
// what the route table's role promises: a principal below the route's role is refused 403
// (never a 2xx, nothing done); one at or above it is never refused for its role; and the other
// team's member, whom the role admits, gets for the team's stack, the team itself and the
// member's own token and SSH key exactly what it gets for an object that does not exist (404
// where the route looks the object up first), never a 2xx, nothing done.
func TestRolesAgainstEveryRoute(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, nil)
	roles := app.RouteRoles(s.Deps)
	red, blue := s.NewTeam("red"), s.NewTeam("blue")
	_, member := s.NewUser(auth.RoleMember, red)
	_, viewer := s.NewUser(auth.RoleViewer, red)
	_, outsider := s.NewUser(auth.RoleMember, blue)
	stack := s.NewStack(red, "web")
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	key := s.Do("POST", "/v1/ssh-keys", apitest.Req{Token: member, Body: map[string]any{"name": "laptop",
		"public_key": strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sshPub)))}})
	tokens := s.Do("GET", "/v1/tokens", apitest.Req{Token: member})
	if key.Status != 201 || tokens.Status != 200 {
		t.Fatalf("the member's key and tokens: %d %s, %d %s", key.Status, key.Body, tokens.Status, tokens.Body)
	}
	// red's objects, by the collection whose {id} names them; the outsider may see none.
	owned := map[string]string{
		"/v1/stacks/{id}":   stack.String(),
		"/v1/teams/{id}":    red.String(),
		"/v1/ssh-keys/{id}": key.Map()["id"].(string),
		"/v1/tokens/{id}":   tokens.Map()["items"].([]any)[0].(map[string]any)["id"].(string),
	}
	ownedID := func(path string) string {
		for prefix, id := range owned {
			if path == prefix || strings.HasPrefix(path, prefix+"/") {
				return id
			}
		}
		return ""
	}
	// Each token is used once first, so that recording its first use is not taken for a write.
	for _, tok := range []string{member, viewer, outsider} {
		s.Do("GET", "/v1/me", apitest.Req{Token: tok})
	}
	principals := []struct {
		name, token string
		is          api.Role // the most the principal is
	}{{"admin", s.Admin, api.Admin}, {"member", member, api.Member}, {"viewer", viewer, api.SignedIn}}
	roleRefusal := func(p apitest.Problem) bool {
		return p.Type == "urn:horizon:problem:forbidden" && (p.Detail == "Only admins may do this." || p.Detail == "Viewers have read-only access.")
	}

	ops := operations(t)
	for _, o := range ops {
		if _, ok := roles[o.method+" "+o.path]; !ok {
			t.Errorf("%s %s has no row in the route table", o.method, o.path)
		}
	}
	// The refusals first: together they must leave the database as it was.
	before := s.State()
	refused, outsiders := 0, 0
	for _, o := range ops {
		need := roles[o.method+" "+o.path]
		id := ownedID(o.path)
		c := o.call(id)
		for _, p := range principals {
			if p.is >= need {
				continue
			}
			refused++
			if got, prob := c.send(s, p.token); got.Status != 403 || !roleRefusal(prob) {
				t.Errorf("%s %s (role %s) as a %s: %d %.200s, want 403 for the role", o.method, c.target, need, p.name, got.Status, got.Body)
			}
		}
		if id == "" || need > api.Member {
			continue // not an object of red's, or the role refuses the outsider already
		}
		outsiders++
		got, prob := c.send(s, outsider)
		missing, _ := o.call(uuid.NewString()).send(s, outsider)
		if got.Status/100 == 2 || got.Status != missing.Status || roleRefusal(prob) {
			t.Errorf("%s %s (red's) as blue's member: %d %.200s, want what a missing object gets (%d), never a 2xx",
				o.method, c.target, got.Status, got.Body, missing.Status)
		}
	}
	if after := s.State(); after != before {
		t.Errorf("the refused requests changed the database:\n%s", after)
	}
	// Then the principals the role admits: whatever the route answers, it is not the role that
	// refuses them. These requests may change things (a deploy starts), so they come last.
	opened := 0
	for _, o := range ops {
		need := roles[o.method+" "+o.path]
		c := o.call(ownedID(o.path))
		for _, p := range principals {
			if p.is < need {
				continue
			}
			opened++
			if got, prob := c.send(s, p.token); roleRefusal(prob) {
				t.Errorf("%s %s (role %s) as a %s: refused for the role: %d %s", o.method, c.target, need, p.name, got.Status, got.Body)
			}
		}
	}
	if refused < 50 || outsiders < 30 || opened < 150 {
		t.Fatalf("only %d refusals, %d outsider requests and %d openings checked", refused, outsiders, opened)
	}
	t.Logf("%d operations: %d refusals, %d outsider requests, %d openings", len(ops), refused, outsiders, opened)
}
