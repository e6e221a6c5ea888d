package stacks_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"horizon/functions/apitest"
	"horizon/shared/auth"
)

// TestListFiltersByEnvironmentAndTextOnTheServer: ?environment_id= and ?q= filter in the
// query — across pages, within the caller's teams — not in the page a client loaded.
func TestListFiltersByEnvironmentAndTextOnTheServer(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, nil)
	red, blue := s.NewTeam("red"), s.NewTeam("blue")
	_, member := s.NewUser(auth.RoleMember, red)
	web := s.NewStack(red, "Web-Shop")
	db := s.NewStack(red, "billing-db")
	s.NewStack(blue, "web-of-blue") // another team's: never listed for the member
	ctx := context.Background()
	if _, err := s.DB.Exec(ctx, `UPDATE stacks SET description = 'the payments database', labels = '{pci}' WHERE id = $1`, db); err != nil {
		t.Fatal(err)
	}
	// The web stack is the older one: on a page of one, a filter applied to the loaded page
	// would find nothing.
	var envOfWeb string
	if err := s.DB.QueryRow(ctx, `SELECT environment_id FROM stacks WHERE id = $1`, web).Scan(&envOfWeb); err != nil {
		t.Fatal(err)
	}
	names := func(query string) []string {
		t.Helper()
		r := s.Do("GET", "/v1/stacks?limit=1&"+query, apitest.Req{Token: member})
		if r.Status != 200 {
			t.Fatalf("GET /v1/stacks?%s: %d %s", query, r.Status, r.Body)
		}
		var out []string
		for _, it := range r.Map()["items"].([]any) {
			out = append(out, it.(map[string]any)["name"].(string))
		}
		slices.Sort(out)
		return out
	}
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"q=WEB", []string{"Web-Shop"}},        // case-insensitive, the other team's web not listed
		{"q=payments", []string{"billing-db"}}, // in the description
		{"q=pci", []string{"billing-db"}},      // a label
		{"environment_id=" + envOfWeb, []string{"Web-Shop"}},
		{"q=%25", nil}, // a LIKE wildcard is text
		{"environment_id=" + uuid.NewString(), nil},
	} {
		if got := names(tc.query); !slices.Equal(got, tc.want) {
			t.Errorf("?%s: %v, want %v", tc.query, got, tc.want)
		}
	}
	if r := s.Do("GET", "/v1/stacks?q="+strings.Repeat("x", 201), apitest.Req{Token: member}); r.Status != 400 {
		t.Errorf("?q= of 201 bytes: %d, want 400", r.Status)
	}
	if r := s.Do("GET", "/v1/stacks?environment_id=nope", apitest.Req{Token: member}); r.Status != 400 || !strings.Contains(r.Problem().Detail, "environment_id") {
		t.Errorf("a malformed environment_id: %d %s", r.Status, r.Body)
	}
}
