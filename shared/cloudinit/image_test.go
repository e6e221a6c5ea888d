package cloudinit_test

import (
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"horizon/shared/cloudinit"
	"horizon/shared/testkit"
)

func TestRenderImageUserData(t *testing.T) {
	t.Parallel()
	key := "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl ana@laptop"
	got, err := cloudinit.RenderImageUserData(cloudinit.ImageUser{User: "debian", AuthorizedKeys: []string{key + "\n"}})
	if err != nil {
		t.Fatal(err)
	}
	testkit.Golden(t, "userdata_image.yaml", got)
	var doc map[string]any
	if err := yaml.Unmarshal(got, &doc); err != nil {
		t.Fatalf("output is not valid YAML: %v", err)
	}
	if _, ok := doc["hostname"]; ok {
		t.Error("an image's user-data sets a host name: every clone would share it")
	}
	if doc["disable_root"] != true || doc["ssh_pwauth"] != false {
		t.Errorf("root or password login allowed: %v", doc)
	}
	if _, ok := doc["ssh_keys"]; ok {
		t.Error("an image's user-data sets host keys: every clone would share them")
	}
	for _, tc := range []struct {
		name string
		u    cloudinit.ImageUser
		want string
	}{
		{"root", cloudinit.ImageUser{User: "root", AuthorizedKeys: []string{key}}, "login name"},
		{"no key", cloudinit.ImageUser{}, "no authorized key"},
		{"two keys in one", cloudinit.ImageUser{AuthorizedKeys: []string{key + "\n" + key}}, "more than one line"},
	} {
		if _, err := cloudinit.RenderImageUserData(tc.u); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error about %q", tc.name, err, tc.want)
		}
	}
}
