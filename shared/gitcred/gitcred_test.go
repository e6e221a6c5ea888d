package gitcred_test

import (
	"context"
	"crypto/rand"
	"testing"

	"horizon/shared/gitcred"
	"horizon/shared/horizon"
	"horizon/shared/secrets"
	"horizon/shared/store"
	"horizon/shared/testkit"
)

func TestMatches(t *testing.T) {
	t.Parallel()
	tests := []struct {
		prefix, url string
		want        bool
	}{
		{"https://git.example.org/infra/k8s.git", "https://git.example.org/infra/k8s.git", true},
		{"https://git.example.org/infra/", "https://git.example.org/infra/k8s.git", true},
		{"https://git.example.org/infra", "https://git.example.org/infra/k8s.git", true},
		{"https://git.example.org", "https://git.example.org/infra/k8s.git", true},
		{"https://git.example.org/infra", "https://git.example.org/infrastructure/k8s.git", false},
		{"https://git.example.org", "https://git.example.org.attacker.test/x.git", false},
		{"https://git.example.org/infra/k8s", "https://git.example.org/infra/k8s.git", false},
		{"ssh://git@git.example.org/", "https://git.example.org/infra/k8s.git", false},
		{"", "https://git.example.org/x", false},
	}
	for _, tc := range tests {
		if got := gitcred.Matches(tc.prefix, tc.url); got != tc.want {
			t.Errorf("Matches(%q, %q) = %v, want %v", tc.prefix, tc.url, got, tc.want)
		}
	}
}

func TestCheckPrefix(t *testing.T) {
	t.Parallel()
	tests := []struct {
		prefix, kind string // kind "" means refused
	}{
		{"https://git.example.org/", horizon.GitCredentialHTTPS},
		{"https://git.example.org", horizon.GitCredentialHTTPS},
		{"ssh://git@git.example.org:2222/infra/", horizon.GitCredentialSSH},
		{"https://bot@git.example.org/", ""},
		{"https://bot:pw@git.example.org/", ""},
		{"ssh://git:pw@git.example.org/", ""},
		{"file:///srv/git/", ""},
		{"http://git.example.org/", ""},
		{"git@git.example.org:infra", ""},
		{"https:///infra", ""},
		{"https://git.example.org/?x=1", ""},
		{"https://git.example.org/#x", ""},
		{"https://git.example.org/ x", ""},
		{"", ""},
	}
	for _, tc := range tests {
		kind, err := gitcred.CheckPrefix(tc.prefix)
		if kind != tc.kind || (err == nil) != (tc.kind != "") {
			t.Errorf("CheckPrefix(%q) = %q, %v; want kind %q", tc.prefix, kind, err, tc.kind)
		}
	}
}

func TestForPicksTheLongestCoveringPrefixAndOpensIt(t *testing.T) {
	t.Parallel()
	db := testkit.DB(t)
	ctx := context.Background()
	key := make([]byte, secrets.KeySize)
	_, _ = rand.Read(key)
	box, err := secrets.NewBox(key)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range []horizon.GitCredential{
		{Name: "host", URLPrefix: "https://git.example.org", Kind: "https", Username: "bot", Token: box.SealString(gitcred.TokenPurpose, "host-token")},
		{Name: "infra", URLPrefix: "https://git.example.org/infra/", Kind: "https", Token: box.SealString(gitcred.TokenPurpose, "infra-token")},
		{Name: "ssh", URLPrefix: "ssh://git@git.example.org/", Kind: "ssh", SSHPrivateKey: box.SealString(gitcred.SSHKeyPurpose, "KEY"), SSHHostKey: "ssh-ed25519 AAAA"},
	} {
		if _, err := store.GitCredentialCreate(ctx, db, g); err != nil {
			t.Fatal(err)
		}
	}
	repos := []string{
		"https://git.example.org/infra/k8s.git",
		"https://git.example.org/apps/web.git",
		"https://git.example.org.attacker.test/infra/k8s.git",
		"ssh://git@git.example.org/infra/k8s.git",
		"file:///srv/git/k8s.git",
	}
	got, err := gitcred.For(ctx, db, box, repos)
	if err != nil {
		t.Fatal(err)
	}
	if c := got[repos[0]]; c.Token.Reveal() != "infra-token" || c.Username != "" {
		t.Errorf("%s got token %q user %q, want the longer prefix's", repos[0], c.Token.Reveal(), c.Username)
	}
	if c := got[repos[1]]; c.Token.Reveal() != "host-token" || c.Username != "bot" {
		t.Errorf("%s got token %q user %q, want the host's", repos[1], c.Token.Reveal(), c.Username)
	}
	if c := got[repos[3]]; c.SSHKey.Reveal() != "KEY" || c.SSHHostKey != "ssh-ed25519 AAAA" {
		t.Errorf("%s got %+v, want the ssh credential", repos[3], c)
	}
	for _, r := range []string{repos[2], repos[4]} {
		if _, ok := got[r]; ok {
			t.Errorf("%s got a credential, want none", r)
		}
	}

	other, _ := secrets.NewBox(make([]byte, secrets.KeySize))
	if _, err := gitcred.For(ctx, db, other, repos[:1]); err == nil {
		t.Error("a credential sealed under another key opened")
	}
}
