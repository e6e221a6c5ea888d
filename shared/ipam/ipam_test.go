package ipam_test

import (
	"net/netip"
	"reflect"
	"testing"

	"horizon/shared/ipam"
)

func TestParseNetwork(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		cidr, gw     string
		dns          []string
		wantProblems []string // fields
	}{
		{"valid v4", "10.20.0.0/24", "10.20.0.1", []string{"1.1.1.1", "9.9.9.9"}, nil},
		{"valid v6", "2001:db8::/64", "2001:db8::1", []string{"2001:4860:4860::8888"}, nil},
		{"garbage cidr", "10.20.0.0/33", "10.20.0.1", nil, []string{"cidr"}},
		{"host bits", "10.20.0.5/24", "10.20.0.1", nil, []string{"cidr"}},
		{"gateway outside", "10.20.0.0/24", "10.30.0.1", nil, []string{"gateway"}},
		{"gateway is network", "10.20.0.0/24", "10.20.0.0", nil, []string{"gateway"}},
		{"gateway is broadcast", "10.20.0.0/24", "10.20.0.255", nil, []string{"gateway"}},
		{"gateway garbage", "10.20.0.0/24", "gw", nil, []string{"gateway"}},
		{"dns not ip", "10.20.0.0/24", "10.20.0.1", []string{"1.1.1.1", "dns.example"}, []string{"dns[1]"}},
		{"everything wrong", "x", "y", []string{"z"}, []string{"cidr", "gateway", "dns[0]"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, problems := ipam.ParseNetwork(tc.cidr, tc.gw, tc.dns)
			var got []string
			for _, p := range problems {
				got = append(got, p.Field)
			}
			if !reflect.DeepEqual(got, tc.wantProblems) {
				t.Fatalf("problems on %v, want %v (%v)", got, tc.wantProblems, problems)
			}
		})
	}
}

func TestCheckAddress(t *testing.T) {
	t.Parallel()
	n, problems := ipam.ParseNetwork("192.168.10.0/24", "192.168.10.1", nil)
	if problems != nil {
		t.Fatal(problems)
	}
	for ip, ok := range map[string]bool{
		"192.168.10.20":  true,
		"192.168.10.254": true,
		"192.168.10.0":   false,
		"192.168.10.255": false,
		"192.168.10.1":   false,
		"192.168.11.20":  false,
	} {
		msg := ipam.CheckAddress(n, netip.MustParseAddr(ip))
		if (msg == "") != ok {
			t.Errorf("CheckAddress(%s) = %q, want ok=%v", ip, msg, ok)
		}
	}
}
