package activity_test

import (
	"net/url"
	"testing"
	"time"

	"horizon/functions/apitest"
	"horizon/shared/auth"
)

// TestActivityIsReadWithinTeams: the audit trail answers each caller with its teams' records
// only (admins: all, including records of no team), newest first, paged, and narrowed by
// object, actor, action and time.
func TestActivityIsReadWithinTeams(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, nil)
	teamA, teamB := s.NewTeam("a"), s.NewTeam("b")
	actorA, memberA := s.NewUser(auth.RoleMember, teamA)
	_, memberB := s.NewUser(auth.RoleMember, teamB)
	stackA, stackB := s.NewStack(teamA, "a"), s.NewStack(teamB, "b")
	rename := func(token, stack, name string) {
		etag := s.Do("GET", "/v1/stacks/"+stack, apitest.Req{Token: token}).Header.Get("ETag")
		if r := s.Do("PATCH", "/v1/stacks/"+stack, apitest.Req{Token: token, Headers: map[string]string{"If-Match": etag},
			Body: map[string]any{"name": name}}); r.Status != 200 {
			t.Fatalf("rename: %d %s", r.Status, r.Body)
		}
	}
	rename(memberA, stackA.String(), "a1")
	rename(memberA, stackA.String(), "a2")
	rename(memberB, stackB.String(), "b1")
	if r := s.Do("POST", "/v1/networks", apitest.Req{Body: map[string]any{"name": "lan", "cidr": "10.9.0.0/24", "gateway": "10.9.0.1",
		"dns": []string{"10.9.0.53"}, "bridge": "vmbr0"}}); r.Status != 201 {
		t.Fatalf("network: %d %s", r.Status, r.Body)
	}
	list := func(token string, query url.Values) []map[string]any {
		t.Helper()
		r := s.Do("GET", "/v1/activity?"+query.Encode(), apitest.Req{Token: token})
		if r.Status != 200 {
			t.Fatalf("GET /v1/activity?%s: %d %s", query.Encode(), r.Status, r.Body)
		}
		var out []map[string]any
		for _, it := range r.Map()["items"].([]any) {
			out = append(out, it.(map[string]any))
		}
		return out
	}

	mine := list(memberA, nil)
	if len(mine) != 2 || mine[0]["details"] == nil {
		t.Fatalf("team a's member reads %v, want its two renames", mine)
	}
	for _, rec := range mine {
		if rec["team_id"] != teamA.String() || rec["object_id"] != stackA.String() || rec["actor_id"] != actorA.String() {
			t.Fatalf("team a's member reads %v", rec)
		}
	}
	if got := list(memberB, url.Values{"stack_id": {stackA.String()}}); len(got) != 0 {
		t.Fatalf("team b's member reads team a's stack's records: %v", got)
	}
	all := list("", nil)
	if len(all) != 4 || all[0]["action"] != "network.create" || all[0]["team_id"] != nil {
		t.Fatalf("the admin reads %v, want four records, the network's (no team) first", all)
	}
	if got := list("", url.Values{"action": {"stack."}, "actor_id": {actorA.String()}}); len(got) != 2 {
		t.Fatalf("stack.* by a's member: %v", got)
	}
	if got := list("", url.Values{"action": {"network.create"}}); len(got) != 1 {
		t.Fatalf("network.create: %v", got)
	}
	if got := list("", url.Values{"since": {time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}}); len(got) != 0 {
		t.Fatalf("records in the future: %v", got)
	}
	if r := s.Do("GET", "/v1/activity?until=yesterday", apitest.Req{}); r.Status != 400 {
		t.Fatalf("a malformed time: %d", r.Status)
	}

	// Pages, newest first, until the cursor runs out.
	var paged []string
	cursor := ""
	for {
		q := url.Values{"limit": {"1"}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		r := s.Do("GET", "/v1/activity?"+q.Encode(), apitest.Req{}).Map()
		for _, it := range r["items"].([]any) {
			paged = append(paged, it.(map[string]any)["id"].(string))
		}
		next, _ := r["next_cursor"].(string)
		if next == "" {
			break
		}
		cursor = next
	}
	if len(paged) != 4 || paged[0] != all[0]["id"] || paged[3] != all[3]["id"] {
		t.Fatalf("pages %v, want the four records in the order %v", paged, all)
	}
}
