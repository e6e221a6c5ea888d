package cloudinit_test

import (
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"horizon/shared/cloudinit"
	"horizon/shared/testkit"
)

func TestRenderVendorData(t *testing.T) {
	t.Parallel()
	v := cloudinit.Vendor{
		Packages: []string{"qemu-guest-agent"},
		RunCmd:   [][]string{{"systemctl", "enable", "--now", "qemu-guest-agent"}},
		Extra:    "timezone: Europe/Madrid\n# kept in the operator's order\nwrite_files:\n  - path: /etc/motd\n    content: \"built by: horizon #1\"\n",
	}
	got, err := cloudinit.RenderVendorData(v)
	if err != nil {
		t.Fatal(err)
	}
	testkit.Golden(t, "vendordata.yaml", got)
	var doc map[string]any
	if err := yaml.Unmarshal(got, &doc); err != nil {
		t.Fatalf("output is not valid YAML: %v", err)
	}
	if doc["timezone"] != "Europe/Madrid" || doc["package_update"] != true {
		t.Fatalf("document = %v", doc)
	}
}

func TestRenderVendorDataRejectsBadExtra(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, extra, want string }{
		{"not a mapping", "- a\n- b\n", "not a YAML mapping"},
		{"not yaml", "a: [b\n", "vendor-data extra"},
		{"repeats packages", "packages: [curl]\n", `"packages"`},
		{"a key twice", "timezone: UTC\ntimezone: CET\n", `"timezone" already defined`},
		// Found by FuzzRenderVendorData: a duplicate inside a list's mapping was written back.
		{"a key twice, deep", "write_files:\n  - path: /a\n    path: /b\n", `"path" already defined`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := cloudinit.RenderVendorData(cloudinit.Vendor{Packages: []string{"x"}, Extra: tc.extra})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error mentioning %s", err, tc.want)
			}
		})
	}
}
