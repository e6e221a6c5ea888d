package apitest

import (
	"context"
	"fmt"
	"strings"
)

// domainTables are the tables a rejected request must leave untouched. idempotency_keys is not
// among them: a rejected request with a key stores its rejection, to replay it.
var domainTables = []string{"teams", "users", "memberships", "api_tokens", "networks", "addresses",
	"address_attachments", "environments", "environment_networks", "environment_proxmox_servers", "ssh_keys", "nagios_servers",
	"proxmox_servers", "proxmox_nodes", "proxmox_storages", "proxmox_pools", "proxmox_iso_files", "activity",
	"templates", "template_versions", "git_credentials", "iso_templates", "iso_template_versions", "isos", "iso_state_history"}

// State returns a digest of every domain table's rows (api_tokens without last_used_at, which
// reads touch). Compare two States to prove a request changed nothing.
func (s *Server) State() string {
	s.t.Helper()
	var b strings.Builder
	for _, table := range domainTables {
		var digest *string
		q := fmt.Sprintf(`SELECT md5(string_agg(r::text, ',' ORDER BY r::text)) FROM (SELECT * FROM %s) r`, table)
		if table == "api_tokens" {
			q = `SELECT md5(string_agg(r::text, ',' ORDER BY r::text)) FROM (SELECT id, user_id, name, hash, revoked_at FROM api_tokens) r`
		}
		if err := s.DB.QueryRow(context.Background(), q).Scan(&digest); err != nil {
			s.t.Fatalf("digest %s: %v", table, err)
		}
		d := "empty"
		if digest != nil {
			d = *digest
		}
		fmt.Fprintf(&b, "%s=%s\n", table, d)
	}
	return b.String()
}
