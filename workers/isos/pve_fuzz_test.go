package isos

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"horizon/shared/horizon"
	"horizon/shared/isotemplate"
)

// FuzzPVEValues checks that every Proxmox property string an image build writes (net0,
// hostpciN, ipconfig0 of the VM and of each clone, the name servers) reads back, the way PVE
// parses it, as exactly the keys and values of the spec it came from: a spec the validator
// accepts can never smuggle a second key into a value (a bridge "vmbr0,firewall=0", a gateway
// "1.2.3.4,ip6=…") or lose one.
func FuzzPVEValues(f *testing.F) {
	const key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl test"
	sum := strings.Repeat("ab", 32)
	base := func(vm, network, clones string) string {
		return `{"source":{"url":"https://cloud.example.org/noble.img","checksum":"` + sum + `"},"storage":"local",` +
			`"vm":` + vm + `,"cloud_init":{"ssh_authorized_keys":["` + key + `"],"network":` + network + `},"clones":` + clones + `}`
	}
	f.Add(base(`{"vmid":9000,"name":"noble","bios":"ovmf","tpm":true,"disk":{"storage":"local-lvm","size_gb":32},`+
		`"gpu":[{"device":"0000:01:00.0","pcie":true,"primary_gpu":true,"rombar":false,"mdev":"nvidia-63"}],"network":{"vlan":20,"firewall":true}}`,
		`{"mode":"static","address":"10.0.0.5/24","gateway":"10.0.0.1","dns":["10.0.0.53","1.1.1.1"]}`,
		`[{"name":"web-1","vmid":9101,"ip":"10.0.0.21/24"},{"name":"web-2","vmid":9102,"ip":"10.0.1.2/24","gateway":"10.0.1.1"}]`))
	f.Add(base(`{"vmid":9000,"name":"noble","disk":{"storage":"local-lvm","size_gb":8},"network":{"bridge":"vmbr1","model":"e1000"}}`,
		`{"mode":"dhcp"}`, `[]`))
	f.Add(base(`{"vmid":9000,"name":"noble","disk":{"storage":"local-lvm","size_gb":8},"network":{"bridge":"vmbr0,firewall=0"}}`,
		`{"mode":"static","address":"10.0.0.5/24","gateway":"10.0.0.1,ip6=auto"}`, `[]`))

	f.Fuzz(func(t *testing.T, raw string) {
		s, err := isotemplate.Parse(horizon.ISOKindCloudImage, []byte(raw), "spec")
		if err != nil || s.VM == nil {
			return
		}
		v := s.VM
		want := map[string]string{"model": v.Network.Model, "bridge": v.Network.Bridge}
		if v.Network.VLAN != nil {
			want["tag"] = strconv.Itoa(*v.Network.VLAN)
		}
		if v.Network.Firewall {
			want["firewall"] = "1"
		}
		roundTrip(t, "net0", netValue(v.Network), "model", want)

		for _, g := range v.GPU {
			want := map[string]string{"host": g.Device}
			if g.PCIe {
				want["pcie"] = "1"
			}
			if g.PrimaryGPU {
				want["x-vga"] = "1"
			}
			if g.ROMBar != nil {
				want["rombar"] = strconv.Itoa(boolInt(*g.ROMBar))
			}
			if g.MDev != "" {
				want["mdev"] = g.MDev
			}
			roundTrip(t, "hostpci", hostpciValue(g), "host", want)
		}

		n := s.CloudInit.Network
		if n.Mode == "static" {
			roundTrip(t, "ipconfig0", ipconfigValue(n.Address, n.Gateway), "", map[string]string{"ip": n.Address, "gw": n.Gateway})
		}
		for _, cl := range s.Clones {
			if cl.IP == "" {
				continue
			}
			gw := cl.Gateway
			if gw == "" {
				gw = n.Gateway
			}
			roundTrip(t, "clone ipconfig0", ipconfigValue(cl.IP, gw), "", map[string]string{"ip": cl.IP, "gw": gw})
		}
		// PVE splits nameserver at white space.
		if got := strings.Fields(strings.Join(n.DNS, " ")); len(got)+len(n.DNS) > 0 && !slices.Equal(got, n.DNS) {
			t.Fatalf("nameserver: wrote %q, PVE reads %q", n.DNS, got)
		}
	})
}

// roundTrip parses value as PVE's parse_property_string does (comma-separated key=value, a
// first bare element under defaultKey) and fails unless it holds exactly want.
func roundTrip(t *testing.T, what, value, defaultKey string, want map[string]string) {
	t.Helper()
	got := map[string]string{}
	for i, part := range strings.Split(value, ",") {
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			if i > 0 || defaultKey == "" {
				t.Fatalf("%s %q: element %q has no key", what, value, part)
			}
			k, v = defaultKey, part
		}
		if _, dup := got[k]; dup {
			t.Fatalf("%s %q: key %q twice", what, value, k)
		}
		got[k] = v
	}
	if !maps.Equal(got, want) {
		t.Fatalf("%s: wrote %q, PVE reads %v, want %v", what, value, got, want)
	}
}
