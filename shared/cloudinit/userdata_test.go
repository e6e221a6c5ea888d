package cloudinit_test

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"

	"horizon/shared/cloudinit"
	"horizon/shared/secrets"
	"horizon/shared/testkit"
)

const (
	userKey   = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHS8GgXWL6gz4DD2Q1+gLz9KNarTW3OE8lsVOPhcoHTO alice@laptop"
	deployKey = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQCnEhkDthnQ4UJh/gQ8IU9yfjLsZVgEqVlfJ7FeZT41JHcxB0bwKGvJJaUcLaMkrn6teOA3X7VmWQfORYWfwKJUr9Q9JIg8nKBpsXF/LqN4bGyT0y5MMeDHSCN+RlaPTafPo3VASEzEJwEG1V57j8pXzzpRZLzY+AR1JYWI1phPWVRBd5sqMdRpKMg6ame6D/L0utpWGoUzH+Ff3vdKwQ1d//IymHbCIIlHmo9u/IiUm+RHtTp/GHzeDGybaShZNwXaMvJzg4M9s0tZUj9qS5lEkOnGeK4QPrs2LwPyEK/p/0FMuD/7XgrQzpfZ+rFhTuMFewUWyF2zdKOlBsJn5+yF horizon-deploy"
	// specialKey has a comment full of YAML syntax: a templated document would break on it.
	specialKey = `ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHS8GgXWL6gz4DD2Q1+gLz9KNarTW3OE8lsVOPhcoHTO bob: "x" #1 & *y {z} [w] 'q' |> %`
)

// testHostKey is a fixed host key kept in testdata, so that golden files are stable.
func testHostKey(t *testing.T) cloudinit.HostKey {
	t.Helper()
	priv, err := os.ReadFile("testdata/host_ed25519")
	if err != nil {
		t.Fatal(err)
	}
	pub, err := os.ReadFile("testdata/host_ed25519.pub")
	if err != nil {
		t.Fatal(err)
	}
	return cloudinit.HostKey{Private: secrets.Value(priv), Public: strings.TrimSpace(string(pub))}
}

// parsed is the subset of a user-data document the tests read back.
type parsed struct {
	Hostname string `yaml:"hostname"`
	FQDN     string `yaml:"fqdn"`
	Users    []struct {
		Name string   `yaml:"name"`
		Keys []string `yaml:"ssh_authorized_keys"`
	} `yaml:"users"`
	SSHPwAuth *bool `yaml:"ssh_pwauth"`
	SSHKeys   struct {
		Private string `yaml:"ed25519_private"`
		Public  string `yaml:"ed25519_public"`
	} `yaml:"ssh_keys"`
	Packages []string   `yaml:"packages"`
	RunCmd   [][]string `yaml:"runcmd"`
}

func TestRenderUserData(t *testing.T) {
	t.Parallel()
	hk := testHostKey(t)
	tests := []struct {
		name string
		m    cloudinit.Machine
	}{
		{"minimal", cloudinit.Machine{Hostname: "web-1", AuthorizedKeys: []string{userKey, deployKey}, HostKey: hk}},
		{"node_exporter", cloudinit.Machine{
			Hostname: "db-0", FQDN: "db-0.prod.example.org", User: "ops",
			AuthorizedKeys: []string{userKey, deployKey}, HostKey: hk, NodeExporter: true,
		}},
		// "yes" and "1e3" are a boolean and a number to a YAML 1.1 reader unless quoted.
		{"yaml_special", cloudinit.Machine{
			Hostname: "yes", FQDN: "yes.1e3.example", AuthorizedKeys: []string{specialKey, deployKey + "\n"}, HostKey: hk,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := cloudinit.RenderUserData(tc.m)
			if err != nil {
				t.Fatal(err)
			}
			testkit.Golden(t, "userdata_"+tc.name+".yaml", got)

			if !strings.HasPrefix(string(got), "#cloud-config\n") {
				t.Fatalf("document does not start with #cloud-config")
			}
			again, err := cloudinit.RenderUserData(tc.m)
			if err != nil || string(again) != string(got) {
				t.Fatalf("a second render differs: not deterministic")
			}
			var p parsed
			if err := yaml.Unmarshal(got, &p); err != nil {
				t.Fatalf("output is not valid YAML: %v", err)
			}
			wantUser := tc.m.User
			if wantUser == "" {
				wantUser = cloudinit.DefaultUser
			}
			wantKeys := make([]string, len(tc.m.AuthorizedKeys))
			for i, k := range tc.m.AuthorizedKeys {
				wantKeys[i] = strings.TrimSpace(k)
			}
			if p.Hostname != tc.m.Hostname || p.FQDN != tc.m.FQDN {
				t.Errorf("hostname, fqdn = %q, %q; want %q, %q", p.Hostname, p.FQDN, tc.m.Hostname, tc.m.FQDN)
			}
			if len(p.Users) != 1 || p.Users[0].Name != wantUser {
				t.Fatalf("users = %+v, want one user %q", p.Users, wantUser)
			}
			if d := cmp.Diff(wantKeys, p.Users[0].Keys); d != "" {
				t.Errorf("authorized keys (-want +got):\n%s", d)
			}
			if p.SSHPwAuth == nil || *p.SSHPwAuth {
				t.Errorf("ssh_pwauth = %v, want false", p.SSHPwAuth)
			}
			if p.SSHKeys.Private != hk.Private.Reveal() || p.SSHKeys.Public != hk.Public {
				t.Errorf("ssh_keys do not round-trip the host key")
			}
			if tc.m.NodeExporter != (len(p.Packages) == 1 && p.Packages[0] == cloudinit.NodeExporterPackage && len(p.RunCmd) == 1) {
				t.Errorf("node exporter %v, but packages %v runcmd %v", tc.m.NodeExporter, p.Packages, p.RunCmd)
			}
		})
	}
}

func TestRenderUserDataRejectsInvalidMachines(t *testing.T) {
	t.Parallel()
	hk := testHostKey(t)
	other, err := cloudinit.NewHostKey()
	if err != nil {
		t.Fatal(err)
	}
	ok := cloudinit.Machine{Hostname: "web-1", AuthorizedKeys: []string{userKey}, HostKey: hk}
	tests := []struct {
		name   string
		modify func(m *cloudinit.Machine)
		want   string
	}{
		{"hostname with a dot", func(m *cloudinit.Machine) { m.Hostname = "web.1" }, "hostname"},
		{"hostname with yaml syntax", func(m *cloudinit.Machine) { m.Hostname = "a: b" }, "hostname"},
		{"hostname too long", func(m *cloudinit.Machine) { m.Hostname = strings.Repeat("a", 64) }, "hostname"},
		{"fqdn of another host", func(m *cloudinit.Machine) { m.FQDN = "db.example.org" }, "fqdn"},
		{"root user", func(m *cloudinit.Machine) { m.User = "root" }, "user"},
		{"no keys", func(m *cloudinit.Machine) { m.AuthorizedKeys = nil }, "no authorized key"},
		{"smuggled second key", func(m *cloudinit.Machine) { m.AuthorizedKeys = []string{userKey + "\n" + deployKey} }, "more than one line"},
		{"garbage key", func(m *cloudinit.Machine) { m.AuthorizedKeys = []string{"not a key"} }, "authorized key 0"},
		{"no host key", func(m *cloudinit.Machine) { m.HostKey = cloudinit.HostKey{} }, "no host key"},
		{"mismatched host key", func(m *cloudinit.Machine) { m.HostKey.Public = other.Public }, "do not match"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := ok
			tc.modify(&m)
			_, err := cloudinit.RenderUserData(m)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got error %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}
