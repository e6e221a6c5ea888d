package gitsource_test

import (
	"errors"
	"strings"
	"testing"

	"horizon/shared/gitsource"
)

func TestCheckURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		url string
		ok  bool
	}{
		{"https://git.example.org/infra/k8s.git", true},
		{"ssh://git@git.example.org:2222/infra/k8s.git", true},
		{"ssh://git.example.org/infra/k8s.git", true},
		{"file:///srv/git/k8s.git", true},
		{"file://localhost/srv/git/k8s.git", true},
		{"", false},
		{"http://git.example.org/k8s.git", false},
		{"git://git.example.org/k8s.git", false},
		{"git@git.example.org:infra/k8s.git", false},
		{"ext::sh -c touch% /tmp/x", false},
		{"fd::17", false},
		{"-uhttps://x/y", false},
		{"https://-oProxyCommand=x/y", false},
		{"ssh://-oProxyCommand=touch%20x@host/r", false},
		{"ssh://git@-oProxyCommand=x/r", false},
		{"https://user:secret@git.example.org/k8s.git", false},
		{"https://token@git.example.org/k8s.git", false},
		{"ssh://git:secret@git.example.org/k8s.git", false},
		{"https://git.example.org/k8s.git?x=1", false},
		{"https://git.example.org/k8s.git#main", false},
		{"https://git.example.org/k8s .git", false},
		{"https://git.example.org/k8s\n.git", false},
		{"https://git.example.org", false},
		{"https:///k8s.git", false},
		{"file://otherhost/srv/k8s.git", false},
		{"https://git.example.org/" + strings.Repeat("a", 2048), false},
	} {
		err := gitsource.CheckURL(tc.url)
		if (err == nil) != tc.ok {
			t.Errorf("CheckURL(%q) = %v, want ok=%v", tc.url, err, tc.ok)
		}
		if err != nil && !errors.Is(err, gitsource.ErrInvalidURL) {
			t.Errorf("CheckURL(%q) = %v, want it to wrap ErrInvalidURL", tc.url, err)
		}
	}
}

func TestCheckBranch(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		branch string
		ok     bool
	}{
		{"main", true},
		{"release/1.x", true},
		{"feature/a-b_c", true},
		{"2024-01-01", true},
		{"", false},
		{"-x", false},
		{"--upload-pack=x", false},
		{"a..b", false},
		{"a b", false},
		{"a~1", false},
		{"a^", false},
		{"a:b", false},
		{"a?", false},
		{"a*", false},
		{"a[b", false},
		{`a\b`, false},
		{"a@{1}", false},
		{"@", false},
		{"HEAD", false},
		{"/a", false},
		{"a/", false},
		{"a//b", false},
		{"a.", false},
		{".a", false},
		{"a/.b", false},
		{"a.lock", false},
		{"a/b.lock/c", false},
		{"a\x01", false},
		{strings.Repeat("a", 256), false},
	} {
		if err := gitsource.CheckBranch(tc.branch); (err == nil) != tc.ok {
			t.Errorf("CheckBranch(%q) = %v, want ok=%v", tc.branch, err, tc.ok)
		}
	}
}
