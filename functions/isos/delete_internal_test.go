package isos

import (
	"testing"

	"github.com/google/uuid"

	"horizon/shared/auth"
	"horizon/shared/horizon"
	"horizon/shared/store"
)

// TestInUseNamesOnlyVisibleStacks: the 409 of an ISO in use names and identifies the stacks of
// the caller's teams (every team's for an admin) and only counts the others.
func TestInUseNamesOnlyVisibleStacks(t *testing.T) {
	mine, theirs := uuid.New(), uuid.New()
	web, db, secret := uuid.New(), uuid.New(), uuid.New()
	users := []store.ISOUser{
		{StackID: db, StackName: "db", TeamID: mine, Job: "db", Index: 0},
		{StackID: db, StackName: "db", TeamID: mine, Job: "db", Index: 1},
		{StackID: secret, StackName: "secret", TeamID: theirs, Job: "vm", Index: 0},
		{StackID: web, StackName: "web", TeamID: mine, Job: "app", Index: 0},
	}
	iso := horizon.ISO{Name: "noble"}

	p := inUse(iso, users, auth.Principal{Role: auth.RoleMember, Teams: []uuid.UUID{mine}})
	want := "ISO noble is used by stack db (db[0], db[1]), stack web (app[0]), 1 stack(s) of other teams: remove those machines or pick another ISO for them first."
	if p.Status != 409 || p.Detail != want {
		t.Fatalf("member: %d %q, want %q", p.Status, p.Detail, want)
	}
	if len(p.Stacks) != 2 || p.Stacks[0].ID != db || p.Stacks[0].Name != "db" || p.Stacks[1].ID != web {
		t.Fatalf("member's stacks %+v, want db and web only", p.Stacks)
	}

	p = inUse(iso, users, auth.Principal{Role: auth.RoleAdmin})
	if len(p.Stacks) != 3 || p.Stacks[1].ID != secret {
		t.Fatalf("admin's stacks %+v, want all three", p.Stacks)
	}
}
