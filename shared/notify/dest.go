package notify

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// MaxURLLength bounds a destination URL (bytes).
const MaxURLLength = 2048

// CheckURL checks a destination URL's form: absolute http(s), a host, no user or password,
// not too long. It does not resolve the host (Guard.Check does).
func CheckURL(raw string) (*url.URL, error) {
	if len(raw) > MaxURLLength {
		return nil, fmt.Errorf("is longer than %d bytes", MaxURLLength)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, errors.New("is not a URL")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, errors.New("must be an http or https URL")
	}
	if u.User != nil {
		return nil, errors.New("must not carry a user or password (the secret signs the messages)")
	}
	if u.Hostname() == "" {
		return nil, errors.New("has no host")
	}
	if u.Fragment != "" {
		return nil, errors.New("must not have a fragment")
	}
	return u, nil
}

// Redact returns what the API shows of a destination: its scheme and host. The rest of a Slack
// or Mattermost URL is its secret, and a standard one may carry a token too.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Scheme + "://" + u.Host + "/…"
}

// refused are the ranges no destination may reach unless allowed: this host, the private and
// link-local networks (cloud metadata services live at 169.254.169.254 and fd00:ec2::254),
// carrier-grade NAT, multicast and the unspecified addresses.
func refused() []netip.Prefix {
	var ps []netip.Prefix
	for _, s := range []string{"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
		"192.0.0.0/24", "192.168.0.0/16", "198.18.0.0/15", "224.0.0.0/4", "240.0.0.0/4",
		"::/128", "::1/128", "fc00::/7", "fe80::/10", "ff00::/8", "fd00:ec2::254/128"} {
		ps = append(ps, netip.MustParsePrefix(s))
	}
	return ps
}

// Guard decides which addresses a destination may reach.
type Guard struct {
	// Allow lists the ranges an operator opened although they are refused by default
	// (HORIZON_WEBHOOK_ALLOW_CIDRS), e.g. an in-house chat server on a private network.
	Allow []netip.Prefix
	// Resolve resolves a host name; nil is the system resolver. Tests swap it to change what a
	// name resolves to between a subscription's creation and its delivery.
	Resolve func(ctx context.Context, host string) ([]netip.Addr, error)
}

// ErrRefusedAddress is returned (wrapped) when a destination resolves to a refused address.
var ErrRefusedAddress = errors.New("resolves to an address in a refused range (loopback, private, link-local or metadata)")

// Allowed reports whether addr may be reached.
func (g Guard) Allowed(addr netip.Addr) bool {
	addr = addr.Unmap()
	for _, p := range g.Allow {
		if p.Contains(addr) {
			return true
		}
	}
	for _, p := range refused() {
		if p.Contains(addr) {
			return false
		}
	}
	return true
}

func (g Guard) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a}, nil
	}
	if g.Resolve != nil {
		return g.Resolve(ctx, host)
	}
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

// Check resolves u's host and refuses it when any of its addresses is refused (an attacker
// controlling the name may hand out either).
func (g Guard) Check(ctx context.Context, u *url.URL) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	addrs, err := g.resolve(ctx, u.Hostname())
	if err != nil || len(addrs) == 0 {
		return fmt.Errorf("does not resolve: %s", u.Hostname())
	}
	for _, a := range addrs {
		if !g.Allowed(a) {
			return fmt.Errorf("%w: %s", ErrRefusedAddress, a)
		}
	}
	return nil
}

// Client returns the HTTP client deliveries use: each attempt is bounded by timeout, the host
// is resolved through the guard and every address is checked again when it is dialled (the
// Control hook sees the address the socket connects to, whatever resolved it), no proxy from
// the environment, no redirect followed, no connection kept between destinations' attempts
// longer than the idle timeout.
func (g Guard) Client(timeout time.Duration) *http.Client {
	dialer := &net.Dialer{Timeout: timeout, Control: func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("dial %s: %w", address, err)
		}
		if !g.Allowed(ap.Addr()) {
			return fmt.Errorf("dial %s: %w", address, ErrRefusedAddress)
		}
		return nil
	}}
	transport := &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, network, address string) (net.Conn, error) {
			host, port, err := net.SplitHostPort(address)
			if err != nil {
				return nil, err
			}
			addrs, err := g.resolve(ctx, host)
			if err != nil {
				return nil, err
			}
			var last error = fmt.Errorf("%s does not resolve", host)
			for _, a := range addrs {
				c, err := dialer.DialContext(ctx, network, net.JoinHostPort(a.Unmap().String(), port))
				if err == nil {
					return c, nil
				}
				last = err
			}
			return nil, last
		},
		TLSHandshakeTimeout:   timeout,
		ResponseHeaderTimeout: timeout,
		IdleConnTimeout:       30 * time.Second,
		MaxIdleConnsPerHost:   4,
	}
	return &http.Client{Timeout: timeout, Transport: transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// ParseCIDRs parses a comma-separated CIDR list (HORIZON_WEBHOOK_ALLOW_CIDRS).
func ParseCIDRs(s string) ([]netip.Prefix, error) {
	var ps []netip.Prefix
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			return nil, fmt.Errorf("%q is not a CIDR", f)
		}
		ps = append(ps, p.Masked())
	}
	return ps, nil
}
