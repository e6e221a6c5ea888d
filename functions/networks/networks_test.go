package networks_test

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/google/uuid"

	"horizon/functions/apitest"
	"horizon/shared/auth"
	"horizon/shared/horizon"
	"horizon/shared/store"
)

func validNetwork(name string) map[string]any {
	return map[string]any{"name": name, "cidr": "10.20.0.0/24", "gateway": "10.20.0.1",
		"dns": []string{"10.20.0.2", "1.1.1.1"}, "bridge": "vmbr0", "vlan": 120}
}

func with(m map[string]any, kv ...any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(out, kv[i].(string))
			continue
		}
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}

func TestCreateNetwork(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, nil)
	r := s.Do("POST", "/v1/networks", apitest.Req{Body: validNetwork("prod")})
	if r.Status != 201 {
		t.Fatalf("got %d %s", r.Status, r.Body)
	}
	n := r.Map()
	if n["cidr"] != "10.20.0.0/24" || n["gateway"] != "10.20.0.1" || n["vlan"] != 120.0 || r.Header.Get("ETag") != `"1"` {
		t.Fatalf("created %v (ETag %s)", n, r.Header.Get("ETag"))
	}
	got := s.Do("GET", "/v1/networks/"+n["id"].(string), apitest.Req{})
	if got.Status != 200 || !reflect.DeepEqual(got.Map(), n) {
		t.Fatalf("GET answered %d %s, want what POST returned", got.Status, got.Body)
	}
	_, viewer := s.NewUser(auth.RoleViewer)
	if l := s.Do("GET", "/v1/networks", apitest.Req{Token: viewer}); l.Status != 200 || len(l.Map()["items"].([]any)) != 1 {
		t.Fatalf("viewer list: %d %s", l.Status, l.Body)
	}
}

func TestCreateNetworkRejectsBadInput(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, nil)
	if r := s.Do("POST", "/v1/networks", apitest.Req{Body: validNetwork("taken")}); r.Status != 201 {
		t.Fatal(r.Status)
	}
	_, member := s.NewUser(auth.RoleMember)
	_, viewer := s.NewUser(auth.RoleViewer)
	tests := []struct {
		name       string
		token      string
		body       map[string]any
		wantStatus int
		wantFields []string
	}{
		{"invalid cidr", "", with(validNetwork("a"), "cidr", "10.20.0.0/40"), 422, []string{"cidr"}},
		{"cidr with host bits", "", with(validNetwork("a"), "cidr", "10.20.0.7/24"), 422, []string{"cidr"}},
		{"gateway outside", "", with(validNetwork("a"), "gateway", "10.99.0.1"), 422, []string{"gateway"}},
		{"gateway is broadcast", "", with(validNetwork("a"), "gateway", "10.20.0.255"), 422, []string{"gateway"}},
		{"dns not an ip", "", with(validNetwork("a"), "dns", []string{"1.1.1.1", "dns.google"}), 422, []string{"dns[1]"}},
		{"vlan 0", "", with(validNetwork("a"), "vlan", 0), 422, []string{"vlan"}},
		{"vlan 4095", "", with(validNetwork("a"), "vlan", 4095), 422, []string{"vlan"}},
		{"bad bridge", "", with(validNetwork("a"), "bridge", "vmbr 0; rm"), 422, []string{"bridge"}},
		{"missing name and bridge", "", with(validNetwork(""), "bridge", nil), 422, []string{"bridge", "name"}},
		{"wrong type", "", with(validNetwork("a"), "vlan", "120"), 422, []string{"vlan"}},
		{"server-owned field", "", with(validNetwork("a"), "version", 7), 422, []string{"version"}},
		{"duplicate name", "", validNetwork("taken"), 409, []string{"name"}},
		{"member", member, validNetwork("a"), 403, nil},
		{"viewer", viewer, validNetwork("a"), 403, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := s.State()
			r := s.Do("POST", "/v1/networks", apitest.Req{Token: tc.token, Body: tc.body})
			p := r.Problem()
			fields := p.Fields()
			sort.Strings(fields)
			if r.Status != tc.wantStatus || !reflect.DeepEqual(fields, tc.wantFields) {
				t.Fatalf("got %d fields %v (%s), want %d fields %v", r.Status, fields, r.Body, tc.wantStatus, tc.wantFields)
			}
			if s.State() != before {
				t.Fatal("the rejected request changed the database")
			}
		})
	}
}

func TestAddresses(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, nil)
	net := s.Do("POST", "/v1/networks", apitest.Req{Body: validNetwork("lab")}).Map()
	base := "/v1/networks/" + net["id"].(string) + "/addresses"

	web := s.Do("POST", base, apitest.Req{Body: map[string]any{"name": "web-1", "ip": "10.20.0.10"}})
	if web.Status != 201 || web.Map()["state"] != "free" {
		t.Fatalf("create: %d %s", web.Status, web.Body)
	}
	tests := []struct {
		name       string
		body       map[string]any
		wantStatus int
		wantField  string
	}{
		{"outside the network", map[string]any{"name": "x", "ip": "10.21.0.10"}, 422, "ip"},
		{"network address", map[string]any{"name": "x", "ip": "10.20.0.0"}, 422, "ip"},
		{"broadcast address", map[string]any{"name": "x", "ip": "10.20.0.255"}, 422, "ip"},
		{"gateway", map[string]any{"name": "x", "ip": "10.20.0.1"}, 422, "ip"},
		{"not an ip", map[string]any{"name": "x", "ip": "ten"}, 422, "ip"},
		{"duplicate name", map[string]any{"name": "web-1", "ip": "10.20.0.11"}, 409, "name"},
		{"duplicate ip", map[string]any{"name": "web-2", "ip": "10.20.0.10"}, 409, "ip"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := s.State()
			r := s.Do("POST", base, apitest.Req{Body: tc.body})
			if p := r.Problem(); r.Status != tc.wantStatus || !reflect.DeepEqual(p.Fields(), []string{tc.wantField}) {
				t.Fatalf("got %d %v, want %d on %s", r.Status, p.Fields(), tc.wantStatus, tc.wantField)
			}
			if s.State() != before {
				t.Fatal("the rejected request changed the database")
			}
		})
	}
	if r := s.Do("POST", "/v1/networks/018f0000-0000-7000-8000-000000000000/addresses", apitest.Req{Body: map[string]any{"name": "x", "ip": "10.20.0.12"}}); r.Status != 404 {
		t.Fatalf("address on a missing network: %d", r.Status)
	}

	for i := 0; i < 3; i++ {
		s.Do("POST", base, apitest.Req{Body: map[string]any{"name": fmt.Sprintf("db-%d", i), "ip": fmt.Sprintf("10.20.0.%d", 20+i)}})
	}
	page1 := s.Do("GET", base+"?limit=2&state=free", apitest.Req{}).Map()
	if len(page1["items"].([]any)) != 2 || page1["next_cursor"] == nil {
		t.Fatalf("page 1: %v", page1)
	}
	page2 := s.Do("GET", base+"?limit=2&state=free&cursor="+page1["next_cursor"].(string), apitest.Req{}).Map()
	if len(page2["items"].([]any)) != 2 || page2["next_cursor"] != nil {
		t.Fatalf("page 2: %v", page2)
	}
	if r := s.Do("GET", base+"?state=attached", apitest.Req{}).Map(); len(r["items"].([]any)) != 0 {
		t.Fatalf("attached: %v", r)
	}
	if r := s.Do("GET", base+"?cursor=garbage", apitest.Req{}); r.Status != 400 {
		t.Fatalf("bad cursor: %d", r.Status)
	}
	if r := s.Do("DELETE", base+"/"+web.Map()["id"].(string), apitest.Req{}); r.Status != 204 {
		t.Fatalf("delete: %d", r.Status)
	}
	if r := s.Do("DELETE", "/v1/networks/"+net["id"].(string), apitest.Req{}); r.Status != 409 {
		t.Fatalf("deleting a network with addresses: %d, want 409", r.Status)
	}
}

func TestAddressRange(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, nil)
	net := s.Do("POST", "/v1/networks", apitest.Req{Body: validNetwork("lab")}).Map()
	ranges := "/v1/networks/" + net["id"].(string) + "/address-ranges"
	r := s.Do("POST", ranges, apitest.Req{Body: map[string]any{"name_prefix": "vm-", "first": "10.20.0.10", "last": "10.20.0.14"}})
	if r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	var got []string
	for _, a := range r.Map()["items"].([]any) {
		a := a.(map[string]any)
		got = append(got, a["name"].(string)+"="+a["ip"].(string)+"/"+a["state"].(string))
	}
	want := []string{"vm-10=10.20.0.10/free", "vm-11=10.20.0.11/free", "vm-12=10.20.0.12/free", "vm-13=10.20.0.13/free", "vm-14=10.20.0.14/free"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("created %v, want %v", got, want)
	}
	if l := s.Do("GET", "/v1/networks/"+net["id"].(string)+"/addresses", apitest.Req{}).Map(); len(l["items"].([]any)) != 5 {
		t.Fatalf("listed %v", l)
	}
	_, member := s.NewUser(auth.RoleMember)
	tests := []struct {
		name       string
		token      string
		body       map[string]any
		wantStatus int
		wantField  string
	}{
		{"a member", member, map[string]any{"name_prefix": "m-", "first": "10.20.0.30", "last": "10.20.0.31"}, 403, ""},
		// One address of the range is taken: nothing of it is reserved.
		{"overlapping", "", map[string]any{"name_prefix": "web-", "first": "10.20.0.12", "last": "10.20.0.20"}, 409, "ip"},
		// Free addresses whose names are taken (vm-12, vm-13): refused as a whole too.
		{"names taken", "", map[string]any{"name_prefix": "vm-1", "first": "10.20.0.2", "last": "10.20.0.3"}, 409, "name"},
		{"outside the network", "", map[string]any{"name_prefix": "x-", "first": "10.20.0.250", "last": "10.20.1.3"}, 422, "last"},
		{"the gateway inside", "", map[string]any{"name_prefix": "x-", "first": "10.20.0.1", "last": "10.20.0.3"}, 422, "first"},
		{"the broadcast inside", "", map[string]any{"name_prefix": "x-", "first": "10.20.0.250", "last": "10.20.0.255"}, 422, "first"},
		{"backwards", "", map[string]any{"name_prefix": "x-", "first": "10.20.0.40", "last": "10.20.0.30"}, 422, "last"},
		{"not an ip", "", map[string]any{"name_prefix": "x-", "first": "ten", "last": "10.20.0.30"}, 422, "first"},
		{"a prefix too long", "", map[string]any{"name_prefix": strings.Repeat("p", 97), "first": "10.20.0.30", "last": "10.20.0.31"}, 422, "name_prefix"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := s.State()
			r := s.Do("POST", ranges, apitest.Req{Token: tc.token, Body: tc.body})
			var fields []string
			if tc.wantField != "" {
				fields = []string{tc.wantField}
			}
			if p := r.Problem(); r.Status != tc.wantStatus || !reflect.DeepEqual(p.Fields(), fields) {
				t.Fatalf("got %d %v %s, want %d on %s", r.Status, p.Fields(), r.Body, tc.wantStatus, tc.wantField)
			}
			if s.State() != before {
				t.Fatal("the rejected request changed the database")
			}
		})
	}
	big := s.Do("POST", "/v1/networks", apitest.Req{Body: with(validNetwork("big"), "cidr", "10.30.0.0/16", "gateway", "10.30.0.1")}).Map()
	if r := s.Do("POST", "/v1/networks/"+big["id"].(string)+"/address-ranges", apitest.Req{Body: map[string]any{"name_prefix": "h-", "first": "10.30.1.0", "last": "10.30.2.0"}}); r.Status != 422 || !reflect.DeepEqual(r.Problem().Fields(), []string{"last"}) {
		t.Fatalf("257 addresses: %d %s", r.Status, r.Body)
	}
	if r := s.Do("POST", "/v1/networks/018f0000-0000-7000-8000-000000000000/address-ranges", apitest.Req{Body: map[string]any{"name_prefix": "x-", "first": "10.20.0.30", "last": "10.20.0.31"}}); r.Status != 404 {
		t.Fatalf("a missing network: %d", r.Status)
	}
}

// An attached address names its stack to those who may see the stack, and to no one else.
func TestAddressesNameTheirStack(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, nil)
	net := s.Do("POST", "/v1/networks", apitest.Req{Body: validNetwork("lab")}).Map()
	ranges := "/v1/networks/" + net["id"].(string) + "/address-ranges"
	addrs := s.Do("POST", ranges, apitest.Req{Body: map[string]any{"name_prefix": "vm-", "first": "10.20.0.10", "last": "10.20.0.12"}}).Map()["items"].([]any)
	ctx := context.Background()
	ops, dev := s.NewTeam("ops"), s.NewTeam("dev")
	attach := func(team uuid.UUID, stack string, addr int) {
		st := s.NewStack(team, stack)
		e, err := store.ExecutionInsert(ctx, s.DB, horizon.Execution{StackID: st, Job: "vm", Index: 0})
		if err != nil {
			t.Fatal(err)
		}
		if err := store.AddressAttach(ctx, s.DB, uuid.MustParse(addrs[addr].(map[string]any)["id"].(string)), e.ID); err != nil {
			t.Fatal(err)
		}
	}
	attach(ops, "ops-web", 0)
	attach(dev, "dev-secret-project", 1)
	_, opsMember := s.NewUser(auth.RoleMember, ops)
	list := func(token string) map[string]string {
		r := s.Do("GET", "/v1/networks/"+net["id"].(string)+"/addresses", apitest.Req{Token: token})
		if r.Status != 200 {
			t.Fatalf("list: %d %s", r.Status, r.Body)
		}
		out := map[string]string{}
		for _, a := range r.Map()["items"].([]any) {
			a := a.(map[string]any)
			out[a["name"].(string)] = a["state"].(string)
			if st, ok := a["stack"].(map[string]any); ok {
				out[a["name"].(string)] += " " + st["name"].(string)
			}
		}
		return out
	}
	if got, want := list(""), map[string]string{"vm-10": "attached ops-web", "vm-11": "attached dev-secret-project", "vm-12": "free"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("the admin sees %v, want %v", got, want)
	}
	if got, want := list(opsMember), map[string]string{"vm-10": "attached ops-web", "vm-11": "attached", "vm-12": "free"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("a member of ops sees %v, want %v (another team's stack is not named)", got, want)
	}
}
