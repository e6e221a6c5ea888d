package cloudinit_test

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"horizon/shared/cloudinit"
)

// userDataKeys are the only top-level keys a user-data document may hold.
var userDataKeys = []string{"hostname", "fqdn", "manage_etc_hosts", "users", "disable_root", "ssh_pwauth",
	"ssh_deletekeys", "ssh_keys", "package_update", "packages", "runcmd"}

// FuzzRenderUserData renders user-data from any host name, FQDN, user and key comment (the part
// of an authorized_keys line a user writes freely) and checks what cloud-init will read: a
// single #cloud-config YAML mapping holding only Horizon's keys, whose host name, user and keys
// are the values given, byte for byte. A value that closes a quote, starts a new line or holds
// YAML syntax can neither break the document nor add a key (runcmd, write_files…).
func FuzzRenderUserData(f *testing.F) {
	f.Add("web-1", "web-1.example.org", "", "alice@laptop", false)
	f.Add("db", "", "deploy_user", `bob: "x" #1 & *y {z} [w] 'q' |> %`, true)
	f.Add("a", "a.b", "u", "x\nruncmd: [reboot]", false)
	f.Add("h", "", "horizon", "c\u2028runcmd:\u0085- rm", true)

	f.Fuzz(func(t *testing.T, hostname, fqdn, user, comment string, nodeExporter bool) {
		key := strings.TrimSpace(userKey[:strings.LastIndex(userKey, " ")] + " " + comment)
		m := cloudinit.Machine{Hostname: hostname, FQDN: fqdn, User: user, AuthorizedKeys: []string{key, deployKey},
			HostKey: testHostKey(t), NodeExporter: nodeExporter}
		out, err := cloudinit.RenderUserData(m)
		if err != nil {
			return
		}
		doc := readCloudConfig(t, out)
		for k := range doc {
			if !slices.Contains(userDataKeys, k) {
				t.Fatalf("user-data holds key %q, which Horizon never writes:\n%s", k, out)
			}
		}
		var got struct {
			Hostname string `yaml:"hostname"`
			FQDN     string `yaml:"fqdn"`
			Users    []struct {
				Name string   `yaml:"name"`
				Keys []string `yaml:"ssh_authorized_keys"`
			} `yaml:"users"`
			RunCmd [][]string `yaml:"runcmd"`
		}
		if err := yaml.Unmarshal(out, &got); err != nil {
			t.Fatal(err)
		}
		wantUser := user
		if wantUser == "" {
			wantUser = cloudinit.DefaultUser
		}
		if got.Hostname != hostname || got.FQDN != fqdn || len(got.Users) != 1 || got.Users[0].Name != wantUser {
			t.Fatalf("read back hostname %q fqdn %q users %+v, want %q %q %q", got.Hostname, got.FQDN, got.Users, hostname, fqdn, wantUser)
		}
		if want := []string{key, deployKey}; !slices.Equal(got.Users[0].Keys, want) {
			t.Fatalf("read back keys %q, want %q", got.Users[0].Keys, want)
		}
		if len(got.RunCmd) > 0 != nodeExporter {
			t.Fatalf("runcmd %q with node exporter %v", got.RunCmd, nodeExporter)
		}
	})
}

// FuzzRenderVendorData renders vendor-data from any packages, commands and operator YAML and
// checks that the document is one valid #cloud-config mapping whose keys are exactly Horizon's
// (for what was given) followed by the operator's, and whose packages and commands read back as
// given: a package name cannot add a key, and extra YAML cannot override packages or runcmd.
func FuzzRenderVendorData(f *testing.F) {
	f.Add("qemu-guest-agent", "systemctl enable --now qemu-guest-agent", "timezone: Europe/Paris\n")
	f.Add("a\nruncmd: [x]", "echo 'hi'", "write_files:\n  - path: /etc/motd\n    content: hello\n")
	f.Add("", "", "packages: [x]\n")
	f.Add("p", "", "runcmd: [x]\n")
	f.Add("", "", "a: &x 1\nb: *x\n")
	f.Add("", "", "&x\nA: *x\n")

	f.Fuzz(func(t *testing.T, packages, command, extra string) {
		v := cloudinit.Vendor{Extra: extra}
		if packages != "" {
			v.Packages = strings.Split(packages, "\n")
		}
		if command != "" {
			v.RunCmd = [][]string{strings.Fields(command)}
		}
		out, err := cloudinit.RenderVendorData(v)
		if err != nil {
			return
		}
		doc := readCloudConfig(t, out)
		var extraDoc map[string]any
		_ = yaml.Unmarshal([]byte(extra), &extraDoc)
		for k := range doc {
			ours := k == "packages" || k == "package_update" || k == "runcmd"
			if _, fromExtra := extraDoc[k]; !fromExtra && !ours {
				t.Fatalf("vendor-data holds key %q, from neither Horizon nor the extra YAML:\n%s", k, out)
			}
		}
		// Only what Horizon wrote has Horizon's shape: extra YAML may set the keys Horizon
		// left out, in any shape.
		if len(v.Packages) > 0 {
			var got struct {
				Packages []string `yaml:"packages"`
			}
			if err := yaml.Unmarshal(out, &got); err != nil || !slices.Equal(got.Packages, v.Packages) {
				t.Fatalf("packages read back %q (%v), want %q", got.Packages, err, v.Packages)
			}
		}
		if len(v.RunCmd) > 0 && len(v.RunCmd[0]) > 0 {
			var got struct {
				RunCmd [][]string `yaml:"runcmd"`
			}
			if err := yaml.Unmarshal(out, &got); err != nil || len(got.RunCmd) != 1 || !slices.Equal(got.RunCmd[0], v.RunCmd[0]) {
				t.Fatalf("runcmd read back %q (%v), want %q", got.RunCmd, err, v.RunCmd)
			}
		}
	})
}

// readCloudConfig checks that out is a #cloud-config document holding one YAML mapping with
// unique keys and returns it.
func readCloudConfig(t *testing.T, out []byte) map[string]any {
	t.Helper()
	if !bytes.HasPrefix(out, []byte("#cloud-config\n")) {
		t.Fatalf("no #cloud-config header:\n%s", out)
	}
	dec := yaml.NewDecoder(bytes.NewReader(out))
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("not valid YAML: %v\n%s", err, out)
	}
	var more any
	if err := dec.Decode(&more); err == nil {
		t.Fatalf("more than one YAML document:\n%s", out)
	}
	return doc
}
