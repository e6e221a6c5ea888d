package api_test

import (
	"errors"
	"testing"

	"github.com/google/uuid"

	"horizon/functions/api"
	"horizon/shared/problem"
)

type fieldTarget struct {
	Name   api.Field[string]     `json:"name"`
	Owner  api.Field[*uuid.UUID] `json:"owner"`
	Tags   api.Field[[]string]   `json:"tags"`
	Nested api.Field[*struct {
		Group string `json:"group"`
	}] `json:"nested"`
}

func TestFieldDecodes(t *testing.T) {
	t.Parallel()
	owner := uuid.MustParse("0195f3c4-0000-7000-8000-000000000001")
	tests := []struct {
		name, body                  string
		nameGiven, ownerGiven, null bool
		wantName                    string
		wantOwner                   *uuid.UUID
	}{
		{name: "absent", body: `{}`},
		{name: "value", body: `{"name":"a","owner":"` + owner.String() + `"}`, nameGiven: true, ownerGiven: true, wantName: "a", wantOwner: &owner},
		{name: "empty string is a value", body: `{"name":""}`, nameGiven: true},
		{name: "null on a nullable field", body: `{"owner":null}`, ownerGiven: true, null: true},
		{name: "null with spaces", body: `{"owner": null }`, ownerGiven: true, null: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := run(t, "application/json", tc.body, nil, api.Decode[fieldTarget])
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if got.Name.Given() != tc.nameGiven || got.Name.Value() != tc.wantName || got.Name.Null() {
				t.Errorf("name = given %v %q null %v, want given %v %q", got.Name.Given(), got.Name.Value(), got.Name.Null(), tc.nameGiven, tc.wantName)
			}
			if got.Owner.Given() != tc.ownerGiven || got.Owner.Null() != tc.null {
				t.Errorf("owner given/null = %v/%v, want %v/%v", got.Owner.Given(), got.Owner.Null(), tc.ownerGiven, tc.null)
			}
			if v := got.Owner.Value(); (v == nil) != (tc.wantOwner == nil) || v != nil && *v != *tc.wantOwner {
				t.Errorf("owner = %v, want %v", v, tc.wantOwner)
			}
		})
	}
}

func TestFieldRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, body, field string }{
		{name: "null on a field that is not nullable", body: `{"name":null}`, field: "name"},
		{name: "null on a list", body: `{"tags":null}`, field: "tags"},
		{name: "wrong type", body: `{"name":5}`, field: "name"},
		{name: "wrong type in a nullable field", body: `{"owner":"not a uuid"}`},
		{name: "wrong element type", body: `{"tags":[1]}`, field: "tags"},
		{name: "unknown field inside a value", body: `{"nested":{"group":"a","extra":1}}`, field: "extra"},
		{name: "unknown field beside", body: `{"name":"a","state":"x"}`, field: "state"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := run(t, "application/json", tc.body, nil, api.Decode[fieldTarget])
			var p *problem.Problem
			if !errors.As(err, &p) {
				t.Fatalf("Decode error = %v, want a problem", err)
			}
			if tc.field == "" {
				if p.Status != 400 && p.Status != 422 {
					t.Fatalf("status = %d, want 400 or 422", p.Status)
				}
				return
			}
			if p.Status != 422 || len(p.Errors) != 1 || p.Errors[0].Field != tc.field {
				t.Fatalf("problem = %d %+v, want 422 naming %q", p.Status, p.Errors, tc.field)
			}
		})
	}
}

func TestFieldApply(t *testing.T) {
	t.Parallel()
	id := uuid.New()
	body := `{"name":"new","owner":null}`
	got, err := run(t, "application/json", body, nil, api.Decode[fieldTarget])
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	name, owner, tags := "old", &id, []string{"kept"}
	if !got.Name.Apply(&name) || name != "new" {
		t.Errorf("name after Apply = %q, want new (and given)", name)
	}
	if !got.Owner.Apply(&owner) || owner != nil {
		t.Errorf("owner after Apply of null = %v, want nil (cleared)", owner)
	}
	if got.Tags.Apply(&tags) || len(tags) != 1 || tags[0] != "kept" {
		t.Errorf("tags after Apply of absent = %v, want [kept] (not given)", tags)
	}
	if got.Tags.Ptr() != nil {
		t.Errorf("Ptr of absent = %v, want nil", got.Tags.Ptr())
	}
	if p := got.Owner.Ptr(); p == nil || *p != nil {
		t.Errorf("Ptr of null = %v, want a pointer to nil", p)
	}
	if p := got.Name.Ptr(); p == nil || *p != "new" {
		t.Errorf("Ptr of value = %v, want a pointer to new", p)
	}
}
