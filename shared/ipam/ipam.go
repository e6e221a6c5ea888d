// Package ipam holds the address rules of Horizon's network catalogue: what makes a network
// definition valid and which IPs of a network may be handed to a VM.
//
// IPv4 and IPv6 are both accepted. For IPv4 networks larger than /31 the network and broadcast
// addresses are never assignable; the gateway never is.
package ipam

import (
	"net/netip"
	"strconv"
)

// Network is a parsed network definition.
type Network struct {
	CIDR    netip.Prefix
	Gateway netip.Addr
	DNS     []netip.Addr
}

// Problem is a rule an input broke, for the caller to attach to a field.
type Problem struct {
	Field   string
	Message string
}

// ParseNetwork parses and checks a network definition; it returns every problem found.
func ParseNetwork(cidr, gateway string, dns []string) (Network, []Problem) {
	var n Network
	var problems []Problem
	add := func(field, msg string) { problems = append(problems, Problem{field, msg}) }

	prefix, err := netip.ParsePrefix(cidr)
	switch {
	case err != nil:
		add("cidr", "must be a network in CIDR notation, e.g. 10.20.0.0/24")
	case prefix.Masked() != prefix:
		add("cidr", "has host bits set; the network is "+prefix.Masked().String())
	default:
		n.CIDR = prefix
	}
	gw, err := netip.ParseAddr(gateway)
	switch {
	case err != nil || gw.Zone() != "":
		add("gateway", "must be an IP address")
	case n.CIDR.IsValid():
		if msg := assignable(n.CIDR, gw); msg != "" {
			add("gateway", msg)
		}
		n.Gateway = gw
	default:
		n.Gateway = gw
	}
	for i, s := range dns {
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" {
			add(indexed("dns", i), "must be an IP address")
			continue
		}
		n.DNS = append(n.DNS, a)
	}
	return n, problems
}

// CheckAddress says why ip cannot be handed out on n, or "" when it can.
func CheckAddress(n Network, ip netip.Addr) string {
	if msg := assignable(n.CIDR, ip); msg != "" {
		return msg
	}
	if ip == n.Gateway {
		return "is the network's gateway"
	}
	return ""
}

// assignable says why ip is not a host address of prefix, or "".
func assignable(prefix netip.Prefix, ip netip.Addr) string {
	if !prefix.Contains(ip) {
		return "is outside " + prefix.String()
	}
	if ip.Is4() && prefix.Bits() < 31 {
		if ip == prefix.Addr() {
			return "is the network address of " + prefix.String()
		}
		if ip == broadcast(prefix) {
			return "is the broadcast address of " + prefix.String()
		}
	}
	return ""
}

func broadcast(p netip.Prefix) netip.Addr {
	a := p.Addr().As4()
	host := uint32(1)<<(32-p.Bits()) - 1
	v := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3]) | host
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

func indexed(field string, i int) string {
	return field + "[" + strconv.Itoa(i) + "]"
}
