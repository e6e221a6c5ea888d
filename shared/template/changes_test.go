package template_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"horizon/shared/template"
	"horizon/shared/testkit"
)

func TestCompare(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := testkit.NewGitRepo(t)
	repo.Commit(map[string]string{"a/main.tf": `variable "size" { default = 1 }`, "b/main.tf": `variable "size" { default = 1 }`})
	doc := func(desc string) *template.Definition {
		t.Helper()
		d, err := template.Parse(fmt.Appendf(nil, `name: t
description: %s
phases:
  - name: one
    jobs:
      - { name: a, source: { repo: %q, branch: main, path: a } }
      - { name: b, source: { repo: %q, branch: main, path: b } }
`, desc, repo.URL, repo.URL))
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	git := testkit.GitCache(t)
	d := doc("first")
	mods, err := template.Inspect(ctx, d, git, nil)
	if err != nil {
		t.Fatal(err)
	}
	jobs, actions := mods.Commits()
	pin := template.Pin{Hash: d.Hash(), JobCommits: jobs, ActionCommits: actions}

	ch, err := template.Compare(ctx, d, pin, git, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ch.Changed || ch.DefinitionChanged || len(ch.Sources) != 2 || ch.Sources[0].Current != jobs["a"] || ch.Sources[0].Changed {
		t.Fatalf("unchanged template: got %+v, want nothing changed", ch)
	}
	before := git.Stats()
	if _, err := template.Compare(ctx, d, pin, git, nil); err != nil {
		t.Fatal(err)
	}
	// One listing for the branch both jobs share, and no fetch: the commit is cached.
	if after := git.Stats(); after.Listings-before.Listings != 1 || after.Fetches != before.Fetches {
		t.Fatalf("a comparison cost %+v after %+v, want one listing and no fetch", after, before)
	}

	if ch, _ := template.Compare(ctx, doc("second"), pin, git, nil); !ch.Changed || !ch.DefinitionChanged || ch.Sources[0].Changed {
		t.Fatalf("edited definition: got %+v, want the definition changed and the commits not", ch)
	}

	moved := repo.Commit(map[string]string{"a/README": "new"})
	ch, err = template.Compare(ctx, d, pin, git, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !ch.Changed || ch.DefinitionChanged || !ch.Sources[0].Changed || !ch.Sources[1].Changed || ch.Sources[0].Current != moved || ch.Sources[0].Pinned != jobs["a"] {
		t.Fatalf("branch moved: got %+v, want both sources changed to %s", ch, moved)
	}

	repo.Git("branch", "-m", "main", "trunk")
	ch, err = template.Compare(ctx, d, pin, git, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s := ch.Sources[1]; s.Changed || s.Current != "" || !strings.Contains(s.Error, "branch not found") {
		t.Fatalf("branch gone: got %+v, want an error and no change claimed", s)
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := template.Compare(cancelled, d, pin, git, nil); err == nil {
		t.Fatal("a cancelled comparison succeeded")
	}
}
