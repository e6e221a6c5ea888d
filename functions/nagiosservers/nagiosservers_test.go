package nagiosservers_test

import (
	"bytes"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"horizon/functions/apitest"
	"horizon/functions/nagiosservers"
	"horizon/shared/auth"
	"horizon/shared/horizon"
	"horizon/shared/nagios"
	"horizon/shared/nagios/nagiostest"
	"horizon/shared/sshx/sshxtest"
	"horizon/shared/store"
)

func TestRegisterChecksBothSidesAndDiscovers(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, nil)
	n := nagiostest.Start(t, nagiostest.Options{Digest: true})
	r := s.Do("POST", "/v1/nagios-servers", apitest.Req{Body: n.Registration("nagios-1")})
	if r.Status != 201 || strings.Contains(string(r.Body), n.Password) || strings.Contains(string(r.Body), "PRIVATE KEY") {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	var srv nagiosservers.NagiosServer
	r.JSON(&srv)
	if !slices.Contains(srv.Commands, "check-host-alive") || !slices.Contains(srv.Hostgroups, nagiostest.Hostgroup) || srv.DiscoveredAt == nil {
		t.Fatalf("discovery: %+v", srv)
	}
	var pw, key []byte
	if err := s.DB.QueryRow(t.Context(), `SELECT password, ssh_private_key FROM nagios_servers WHERE id = $1`, srv.ID).Scan(&pw, &key); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(pw, []byte(n.Password)) || bytes.Contains(key, []byte("PRIVATE KEY")) {
		t.Fatal("a secret is stored in clear")
	}
	if got, err := s.Deps.Box.OpenString(horizon.PurposeNagiosSSHPrivateKey, key); err != nil || got.Reveal() != n.ClientKeyPEM {
		t.Fatalf("stored key does not open: %v", err)
	}
	_, viewer := s.NewUser(auth.RoleViewer)
	g := s.Do("GET", "/v1/nagios-servers/"+srv.ID.String(), apitest.Req{Token: viewer})
	if g.Status != 200 || !strings.Contains(string(g.Body), `"commands":[`) || strings.Contains(string(g.Body), n.Password) {
		t.Fatalf("get: %d %s", g.Status, g.Body)
	}
	if f := s.Do("POST", "/v1/nagios-servers/"+srv.ID.String()+"/refresh", apitest.Req{Token: viewer}); f.Status != 403 {
		t.Fatalf("a viewer refreshes: %d", f.Status)
	}
	if f := s.Do("POST", "/v1/nagios-servers/"+srv.ID.String()+"/refresh", apitest.Req{}); f.Status != 200 {
		t.Fatalf("refresh: %d %s", f.Status, f.Body)
	}
	// The periodic discovery sees what changed: a host published into the empty group makes
	// hostgrouplist list it.
	if err := nagios.Publish(t.Context(), n.Target(), "test.cfg", nagios.Render("t", []nagios.Host{{Name: "t-0", Address: "10.0.0.9",
		Alias: "t", Hostgroups: []string{nagiostest.EmptyHostgroup}}})); err != nil {
		t.Fatal(err)
	}
	n.WaitHosts(t, func(h []string) bool { return slices.Contains(h, "t-0") })
	if failed, err := nagios.RediscoverAll(t.Context(), s.DB, s.Deps.Box); err != nil || failed != 0 {
		t.Fatalf("rediscover: %d failed, %v", failed, err)
	}
	var seen nagiosservers.NagiosServer
	s.Do("GET", "/v1/nagios-servers/"+srv.ID.String(), apitest.Req{}).JSON(&seen)
	if !slices.Contains(seen.Hostgroups, nagiostest.EmptyHostgroup) || !seen.DiscoveredAt.After(*srv.DiscoveredAt) {
		t.Fatalf("after rediscovery: host groups %v, discovered at %v", seen.Hostgroups, seen.DiscoveredAt)
	}
	// Nagios down: the refresh answers 503, records why and keeps the lists.
	if _, err := s.DB.Exec(t.Context(), `UPDATE nagios_servers SET url = 'http://127.0.0.1:1/cgi-bin/nagios4' WHERE id = $1`, srv.ID); err != nil {
		t.Fatal(err)
	}
	if f := s.Do("POST", "/v1/nagios-servers/"+srv.ID.String()+"/refresh", apitest.Req{}); f.Status != 503 {
		t.Fatalf("refresh with Nagios down: %d %s", f.Status, f.Body)
	}
	var after nagiosservers.NagiosServer
	s.Do("GET", "/v1/nagios-servers/"+srv.ID.String(), apitest.Req{}).JSON(&after)
	if after.DiscoveryError == nil || !slices.Equal(after.Commands, seen.Commands) || !slices.Equal(after.Hostgroups, seen.Hostgroups) {
		t.Fatalf("after a failed refresh: error %v, commands %d", after.DiscoveryError, len(after.Commands))
	}
	if f := s.Do("POST", "/v1/nagios-servers/01900000-0000-7000-8000-000000000000/refresh", apitest.Req{}); f.Status != 404 {
		t.Fatalf("refresh a missing server: %d", f.Status)
	}
}

func TestRegisterNamesTheFailingField(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, nil)
	n := nagiostest.Start(t, nagiostest.Options{})
	impostor := sshxtest.Start(t, sshxtest.Options{})
	with := func(change map[string]any) map[string]any {
		b := n.Registration("nagios-x")
		maps.Copy(b, change)
		return b
	}
	_, member := s.NewUser(auth.RoleMember)
	before := s.State()
	for field, body := range map[string]map[string]any{
		"password":                 with(map[string]any{"password": "wrong"}),
		"url":                      with(map[string]any{"url": "http://127.0.0.1:1/cgi-bin/nagios4"}),
		"ssh_host_key_fingerprint": with(map[string]any{"ssh_address": impostor.Addr}),
		"ssh_private_key":          with(map[string]any{"ssh_private_key": "not a key"}),
		"verify_command":           with(map[string]any{"verify_command": n.Verify + "-missing"}),
		"reload_command":           with(map[string]any{"reload_command": "no-such-reloader --now"}),
		"config_dir":               with(map[string]any{"config_dir": "relative/dir"}),
		"ssh_address":              with(map[string]any{"ssh_address": "127.0.0.1"}),
		"name":                     with(map[string]any{"name": strings.Repeat("n", horizon.MaxNameLength+1)}),
	} {
		r := s.Do("POST", "/v1/nagios-servers", apitest.Req{Body: body})
		if r.Status != 422 || !strings.Contains(string(r.Body), `"field":"`+field+`"`) {
			t.Errorf("%s: %d %s", field, r.Status, r.Body)
		}
		if strings.Contains(string(r.Body), n.Password) {
			t.Errorf("%s: the password is in the answer", field)
		}
	}
	if r := s.Do("POST", "/v1/nagios-servers", apitest.Req{Body: n.Registration("nagios-x"), Token: member}); r.Status != 403 {
		t.Errorf("a member registers: %d", r.Status)
	}
	if s.State() != before {
		t.Fatal("rejected requests changed the database")
	}
	// A name at its length limit is fine.
	if r := s.Do("POST", "/v1/nagios-servers", apitest.Req{Body: with(map[string]any{"name": strings.Repeat("n", horizon.MaxNameLength)})}); r.Status != 201 {
		t.Fatalf("name at the limit: %d %s", r.Status, r.Body)
	}
}

// TestUpdateAddsSSHAndChecksWhatChanged: a server registered without SSH access (before
// migration 00016) gets it through PATCH and can then publish; each change is checked like
// registration on its side and a failure names the field and changes nothing; If-Match is
// honoured; only admins update; an unknown server is 404.
func TestUpdateAddsSSHAndChecksWhatChanged(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, nil)
	n := nagiostest.Start(t, nagiostest.Options{})
	impostor := sshxtest.Start(t, sshxtest.Options{})
	r := s.Do("POST", "/v1/nagios-servers", apitest.Req{Body: n.Registration("nagios-old")})
	if r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	id := r.Map()["id"].(string)
	// As migration 00016 leaves a server registered before it: no SSH access.
	if _, err := s.DB.Exec(t.Context(), `UPDATE nagios_servers SET ssh_address = '', ssh_private_key = NULL, ssh_host_key = '',
		config_dir = DEFAULT, verify_command = DEFAULT, reload_command = DEFAULT WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	target := func() error {
		srv, err := store.NagiosServerGet(t.Context(), s.DB, mustParse(t, id))
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = nagios.Open(s.Deps.Box, srv)
		return err
	}
	if err := target(); !errors.Is(err, nagios.ErrNoSSH) {
		t.Fatalf("a server without SSH opens: %v", err)
	}
	path := "/v1/nagios-servers/" + id
	// A change of the CGI side alone checks the CGIs only: the missing SSH is no problem yet.
	g := s.Do("PATCH", path, apitest.Req{Body: map[string]any{"name": "nagios-renamed", "password": n.Password}})
	if g.Status != 200 || g.Map()["name"] != "nagios-renamed" || g.Map()["ssh_address"] != "" {
		t.Fatalf("rename: %d %s", g.Status, g.Body)
	}
	etag := g.Header.Get("ETag")

	ssh := map[string]any{"ssh_address": n.SSH.Addr, "ssh_user": n.SSH.User, "ssh_private_key": n.ClientKeyPEM,
		"ssh_host_key_fingerprint": n.SSH.Fingerprint, "config_dir": n.Dir, "verify_command": n.Verify, "reload_command": n.Reload}
	with := func(change map[string]any) map[string]any {
		b := maps.Clone(ssh)
		maps.Copy(b, change)
		return b
	}
	_, member := s.NewUser(auth.RoleMember)
	before := s.State()
	for field, body := range map[string]map[string]any{
		"ssh_address":              {"ssh_user": "root"}, // SSH touched, still no address
		"ssh_host_key_fingerprint": with(map[string]any{"ssh_address": impostor.Addr}),
		"ssh_private_key":          with(map[string]any{"ssh_private_key": "not a key"}),
		"reload_command":           with(map[string]any{"reload_command": "no-such-reloader --now"}),
		"verify_command":           with(map[string]any{"verify_command": n.Verify + "-missing"}),
		"config_dir":               with(map[string]any{"config_dir": "/proc/horizon"}),
		"password":                 {"password": "wrong"},
		"url":                      {"url": "http://127.0.0.1:1/cgi-bin/nagios4"},
	} {
		p := s.Do("PATCH", path, apitest.Req{Body: body, Headers: map[string]string{"If-Match": etag}})
		if p.Status != 422 || !strings.Contains(string(p.Body), `"field":"`+field+`"`) {
			t.Errorf("%s: %d %s", field, p.Status, p.Body)
		}
		if strings.Contains(string(p.Body), n.Password) || strings.Contains(string(p.Body), "PRIVATE KEY") {
			t.Errorf("%s: a secret is in the answer", field)
		}
	}
	// No field may be null: it is refused naming the field, before any check runs (a pointer
	// field once took null for "leave as is").
	for _, field := range []string{"name", "url", "username", "password", "ssh_address", "ssh_user", "ssh_private_key",
		"ssh_host_key_fingerprint", "config_dir", "verify_command", "reload_command"} {
		p := s.Do("PATCH", path, apitest.Req{Body: map[string]any{field: nil}, Headers: map[string]string{"If-Match": etag}})
		if p.Status != 422 || !slices.Equal(p.Problem().Fields(), []string{field}) {
			t.Errorf("null %s: %d %s, want 422 naming it", field, p.Status, p.Body)
		}
	}
	if p := s.Do("PATCH", path, apitest.Req{Body: ssh, Token: member}); p.Status != 403 {
		t.Errorf("a member updates: %d", p.Status)
	}
	if p := s.Do("PATCH", "/v1/nagios-servers/01900000-0000-7000-8000-000000000000", apitest.Req{Body: ssh}); p.Status != 404 {
		t.Errorf("update a missing server: %d %s", p.Status, p.Body)
	}
	if p := s.Do("PATCH", path, apitest.Req{Body: ssh, Headers: map[string]string{"If-Match": `"1"`}}); p.Status != 412 {
		t.Errorf("stale If-Match: %d %s", p.Status, p.Body)
	}
	if s.State() != before {
		t.Fatal("rejected updates changed the database")
	}

	u := s.Do("PATCH", path, apitest.Req{Body: ssh, Headers: map[string]string{"If-Match": etag}})
	if u.Status != 200 || u.Map()["ssh_address"] != n.SSH.Addr || u.Header.Get("ETag") == etag || strings.Contains(string(u.Body), "PRIVATE KEY") {
		t.Fatalf("add SSH: %d %s", u.Status, u.Body)
	}
	if u.Map()["name"] != "nagios-renamed" || u.Map()["url"] != g.Map()["url"] || u.Map()["username"] != g.Map()["username"] {
		t.Errorf("add SSH changed what it left out: %s, was %s", u.Body, g.Body)
	}
	if err := target(); err != nil {
		t.Fatalf("after the update the server does not open: %v", err)
	}
	srv, err := store.NagiosServerGet(t.Context(), s.DB, mustParse(t, id))
	if err != nil {
		t.Fatal(err)
	}
	_, tg, err := nagios.Open(s.Deps.Box, srv)
	if err != nil {
		t.Fatal(err)
	}
	if err := nagios.Publish(t.Context(), tg, "patched.cfg", nagios.Render("p", []nagios.Host{{Name: "p-0", Address: "10.0.0.8",
		Alias: "p", Hostgroups: []string{nagiostest.Hostgroup}}})); err != nil {
		t.Fatalf("publish after adding SSH: %v", err)
	}
	n.WaitHosts(t, func(h []string) bool { return slices.Contains(h, "p-0") })
	// Changing the reload command alone re-runs the SSH checks.
	if p := s.Do("PATCH", path, apitest.Req{Body: map[string]any{"reload_command": "no-such-reloader"}}); p.Status != 422 ||
		!strings.Contains(string(p.Body), `"field":"reload_command"`) {
		t.Fatalf("a bad reload command alone: %d %s", p.Status, p.Body)
	}
}

func mustParse(t *testing.T, s string) uuid.UUID {
	t.Helper()
	id, err := uuid.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestDeleteRefusesWhileUsed: a server an environment uses, or that a stack's hosts are
// published to, is kept (409, nothing changed); a free one is forgotten; viewers may not.
func TestDeleteRefusesWhileUsed(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, nil)
	ctx := t.Context()
	newServer := func(name string) string {
		var id uuid.UUID
		if err := s.DB.QueryRow(ctx, `INSERT INTO nagios_servers (name, url, username, password) VALUES ($1, 'http://127.0.0.1:1/', 'u', '\x00') RETURNING id`,
			name).Scan(&id); err != nil {
			t.Fatal(err)
		}
		return id.String()
	}
	exists := func(id string) bool {
		var n int
		if err := s.DB.QueryRow(ctx, `SELECT count(*) FROM nagios_servers WHERE id = $1`, id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 1
	}
	byEnv, published, free := newServer("by-env"), newServer("published"), newServer("free")
	if r := s.Do("POST", "/v1/environments", apitest.Req{Body: map[string]any{"name": "prod", "nagios_server_id": byEnv}}); r.Status != 201 {
		t.Fatalf("environment: %d %s", r.Status, r.Body)
	}
	stack := s.NewStack(s.NewTeam("ops"), "web")
	if _, err := s.DB.Exec(ctx, `INSERT INTO nagios_publications (stack_id, nagios_server_id, hosts) VALUES ($1, $2, '{web-0}')`, stack, published); err != nil {
		t.Fatal(err)
	}
	_, viewer := s.NewUser(auth.RoleViewer)
	if r := s.Do("DELETE", "/v1/nagios-servers/"+free, apitest.Req{Token: viewer}); r.Status != 403 || !exists(free) {
		t.Fatalf("a viewer deletes: %d", r.Status)
	}
	for _, id := range []string{byEnv, published} {
		if r := s.Do("DELETE", "/v1/nagios-servers/"+id, apitest.Req{}); r.Status != 409 || !exists(id) {
			t.Fatalf("delete a server in use: %d %s", r.Status, r.Body)
		}
	}
	if r := s.Do("DELETE", "/v1/nagios-servers/"+free, apitest.Req{}); r.Status != 204 || exists(free) {
		t.Fatalf("delete a free server: %d %s", r.Status, r.Body)
	}
	if r := s.Do("DELETE", "/v1/nagios-servers/"+free, apitest.Req{}); r.Status != 404 {
		t.Fatalf("delete it again: %d", r.Status)
	}
}
