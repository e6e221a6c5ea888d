package nagiosservers_test

import (
	"bytes"
	"strings"
	"testing"

	"horizon/functions/apitest"
	"horizon/shared/horizon"
)

func TestNagiosServers(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, nil)
	body := map[string]any{"name": "nagios-1", "url": "https://nagios.example.org/cgi-bin/nagios4", "username": "horizon", "password": "pa55-w0rd-xyz"}
	r := s.Do("POST", "/v1/nagios-servers", apitest.Req{Body: body})
	if r.Status != 201 || strings.Contains(string(r.Body), "pa55") {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	id := r.Map()["id"].(string)
	var sealed []byte
	if err := s.DB.QueryRow(t.Context(), `SELECT password FROM nagios_servers WHERE id = $1`, id).Scan(&sealed); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte("pa55")) {
		t.Fatal("the password is stored in clear")
	}
	if pw, err := s.Deps.Box.OpenString(horizon.PurposeNagiosPassword, sealed); err != nil || pw.Reveal() != "pa55-w0rd-xyz" {
		t.Fatalf("stored password does not open: %v", err)
	}
	if g := s.Do("GET", "/v1/nagios-servers/"+id, apitest.Req{}); g.Status != 200 || strings.Contains(string(g.Body), "pa55") {
		t.Fatalf("get: %d %s", g.Status, g.Body)
	}
	before := s.State()
	for name, b := range map[string]map[string]any{
		"plain http":       {"name": "x", "url": "http://nagios.example.org/", "username": "u", "password": "p"},
		"credentials":      {"name": "x", "url": "https://u:p@nagios.example.org/", "username": "u", "password": "p"},
		"missing password": {"name": "x", "url": "https://nagios.example.org/", "username": "u"},
	} {
		if r := s.Do("POST", "/v1/nagios-servers", apitest.Req{Body: b}); r.Status != 422 {
			t.Errorf("%s: %d, want 422", name, r.Status)
		}
	}
	if s.State() != before {
		t.Fatal("rejected requests changed the database")
	}
}
