package cloudinit_test

import (
	"strings"
	"testing"

	"horizon/shared/cloudinit"
)

func TestSnippetName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		parts []string
		want  string
	}{
		{[]string{"horizon", "s12", "master", "0", "user"}, "horizon-s12-master-0-user.yaml"},
		{[]string{"Horizon", "S12", "My Job,=x:y/z", "user"}, "horizon-s12-my-job-x-y-z-user.yaml"},
		{[]string{"--", "..", ""}, "snippet.yaml"},
		{[]string{strings.Repeat("a", 200)}, strings.Repeat("a", 115) + ".yaml"},
	}
	for _, tc := range tests {
		got := cloudinit.SnippetName(tc.parts...)
		if got != tc.want {
			t.Errorf("SnippetName(%q) = %q, want %q", tc.parts, got, tc.want)
		}
		if _, err := cloudinit.VolumeID("local", got); err != nil {
			t.Errorf("VolumeID refuses SnippetName's %q: %v", got, err)
		}
	}
}

func TestVolumeID(t *testing.T) {
	t.Parallel()
	got, err := cloudinit.VolumeID("cephfs-snippets", "horizon-s1-web-0-user.yaml")
	if err != nil || got != "cephfs-snippets:snippets/horizon-s1-web-0-user.yaml" {
		t.Fatalf("got %q, %v", got, err)
	}
	for _, tc := range []struct{ storage, name string }{
		{"Local", "a.yaml"},     // storage ids are lower case
		{"local,x=1", "a.yaml"}, // would inject a cicustom property
		{"local", "../a.yaml"},  // path traversal
		{"local", "a,vendor=x"}, // would inject a cicustom property
		{"local", "a b.yaml"},   // space
		{"local", ""},           // empty
	} {
		if v, err := cloudinit.VolumeID(tc.storage, tc.name); err == nil {
			t.Errorf("VolumeID(%q, %q) = %q, want an error", tc.storage, tc.name, v)
		}
	}
}
