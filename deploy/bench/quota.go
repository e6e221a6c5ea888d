package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"
	"golang.org/x/crypto/ssh"

	"horizon/deploy/sandbox/pve"
	"horizon/shared/auth"
	"horizon/shared/horizon"
	"horizon/shared/store"
	"horizon/shared/template"
)

// benchQuota measures what quotas add to a deploy's preflight, for a team whose stacks have
// 1 000 active executions, each with its own answers (so none share a cost). The count reads
// the usage the database keeps per team and environment (team_usage), not the executions, so
// its cost should not grow with them; the usage route's answer checks that the 1 000 are
// there. The deploy is of a draft whose machine lacks its attachments: the preflight runs
// whole (answers, catalogue, Nagios, quota, clusters) and answers 422, so nothing is written
// and every request measures the same work; it is measured twice, for a machine on the
// sandbox's node (its cluster asked, as every deploy does) and for one that names no server
// yet (no cluster asked, Postgres only: the worst case for the ratio). Quotas on: the team has
// limits, and its environment a narrowing, both too large to refuse anything; off: the team
// has no quota row, which skips the count. The two alternate in blocks on one API and one
// connection; the figure is the median of the blocks' p50 ratios. Goal ≤ 1.1×.
func benchQuota(ctx context.Context) error {
	fmt.Printf("Quota benchmark: load %s\n", loadAvg())
	env, err := newBenchEnv(ctx)
	if err != nil {
		return err
	}
	defer env.Close()
	addr, err := serveHorizon(ctx, env)
	if err != nil {
		return err
	}
	client := &fasthttp.HostClient{Addr: addr, MaxConns: 1}
	envID, server, stop, err := sandboxEnvironment(ctx, env, client, addr)
	if err != nil {
		return err
	}
	defer stop()
	team, member, err := seedQuota(ctx, env, envID, server)
	if err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	bearer := "Bearer " + member
	off := func() error {
		_, err := env.DB.Exec(ctx, `DELETE FROM team_quotas WHERE team_id = $1`, team)
		return err
	}
	on := func() error {
		if err := off(); err != nil {
			return err
		}
		if _, err := env.DB.Exec(ctx, `INSERT INTO team_quotas (team_id, machines, vcpus, memory_mib, disk_gib) VALUES ($1, 1e6, 1e6, 1e9, 1e9)`, team); err != nil {
			return err
		}
		_, err := env.DB.Exec(ctx, `INSERT INTO team_environment_quotas (team_id, environment_id, vcpus) VALUES ($1, $2, 1e6)`, team, envID)
		return err
	}
	if err := on(); err != nil {
		return err
	}
	// The count the preflight makes is the usage route's: check that it sees the 1 000.
	if status, body, err := call(client, addr, fasthttp.MethodGet, "/v1/teams/"+team.String()+"/usage", bearer, nil); err != nil || status != 200 ||
		!strings.Contains(string(body), `"machines":{"used":1000,`) {
		return fmt.Errorf("usage: %d %.300s (%v), want 1000 machines used", status, body, err)
	}
	for _, c := range []struct{ name, draft string }{
		{"a machine on the sandbox's node, its cluster asked (as every deploy does)", "draft-live"},
		{"a machine with no server yet: no cluster asked, Postgres only (the worst case for the ratio)", "draft"},
	} {
		var draft uuid.UUID
		if err := env.DB.QueryRow(ctx, `SELECT id FROM stacks WHERE name = $1`, c.draft).Scan(&draft); err != nil {
			return err
		}
		path := "/v1/stacks/" + draft.String() + "/deploy"
		block := func(n int) ([]time.Duration, error) {
			out := make([]time.Duration, 0, n)
			for range n {
				t0 := time.Now()
				status, body, err := call(client, addr, fasthttp.MethodPost, path, bearer, nil)
				if err != nil {
					return nil, err
				}
				out = append(out, time.Since(t0))
				if status != 422 { // the preflight's refusal is the expected answer
					return nil, fmt.Errorf("deploy answered %d, want 422: %.300s", status, body)
				}
			}
			return out, nil
		}
		if _, err := block(50); err != nil { // warm up: connections, plans, caches
			return err
		}
		var ratios, p50on, p50off []float64
		const rounds, perBlock = 10, 100
		for i := range rounds {
			var a, b []time.Duration
			for _, quotas := range []bool{i%2 == 0, i%2 != 0} {
				if err := map[bool]func() error{true: on, false: off}[quotas](); err != nil {
					return err
				}
				lat, err := block(perBlock)
				if err != nil {
					return err
				}
				if quotas {
					a = lat
				} else {
					b = lat
				}
			}
			p50on, p50off = append(p50on, msOf(pctl(a, .5))), append(p50off, msOf(pctl(b, .5)))
			ratios = append(ratios, msOf(pctl(a, .5))/msOf(pctl(b, .5)))
		}
		fmt.Printf("\ndeploy preflight (422) of %s;\nteam with 1 000 active executions, %d blocks of %d requests each way, one connection\n", c.name, rounds, perBlock)
		fmt.Printf("  quotas off: p50 %.2f ms (median of blocks)\n  quotas on:  p50 %.2f ms (median of blocks)\n", median(p50off), median(p50on))
		fmt.Printf("  ratio on/off: %.2f× (median of %d block pairs; min %.2f, max %.2f)   goal ≤ 1.1×\n", median(ratios), rounds,
			slices.Min(ratios), slices.Max(ratios))
	}
	fmt.Printf("load %s\n", loadAvg())
	return nil
}

// sandboxEnvironment starts a Proxmox VE sandbox, registers its cluster as a server (through
// the API, as an admin) and makes an environment of it; stop stops the sandbox.
func sandboxEnvironment(ctx context.Context, env *benchEnv, client *fasthttp.HostClient, addr string) (envID, server uuid.UUID, stop func(), err error) {
	admin, err := userWithToken(ctx, env, "admin", auth.RoleAdmin, nil)
	if err != nil {
		return envID, server, nil, err
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return envID, server, nil, err
	}
	block, err := ssh.MarshalPrivateKey(priv, "horizon bench")
	if err != nil {
		return envID, server, nil, err
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		return envID, server, nil, err
	}
	cfg := pve.DefaultConfig()
	cfg.SSHAuthorizedKeys = append(cfg.SSHAuthorizedKeys, strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey()))))
	sb, err := pve.Start(ctx, cfg)
	if err != nil {
		return envID, server, nil, err
	}
	stop = func() { _ = sb.Close() }
	c := sb.Cluster("demo")
	var nodes []map[string]any
	for _, n := range c.Nodes() {
		nodes = append(nodes, map[string]any{"name": n.Name(), "ssh_address": n.SSHAddr(), "ssh_host_key_fingerprint": n.HostKeyFingerprint()})
	}
	reg := map[string]any{"name": "sandbox", "api_url": c.URL(), "token_id": c.TokenID(), "token_secret": c.TokenSecret(),
		"tls_fingerprint": c.CertFingerprint(), "ssh_user": "root", "ssh_private_key": string(pem.EncodeToMemory(block)), "nodes": nodes}
	for _, step := range []struct {
		path string
		body func() map[string]any
		id   *uuid.UUID
	}{
		{"/v1/proxmox-servers", func() map[string]any { return reg }, &server},
		{"/v1/environments", func() map[string]any {
			return map[string]any{"name": "lab", "network_ids": []string{}, "proxmox_server_ids": []string{server.String()}}
		}, &envID},
	} {
		status, body, err := call(client, addr, fasthttp.MethodPost, step.path, "Bearer "+admin, step.body())
		if err != nil || status != 201 {
			stop()
			return envID, server, nil, fmt.Errorf("POST %s: %d %.300s (%v)", step.path, status, body, err)
		}
		var made struct {
			ID uuid.UUID `json:"id"`
		}
		if err := json.Unmarshal(body, &made); err != nil {
			stop()
			return envID, server, nil, err
		}
		*step.id = made.ID
	}
	return envID, server, stop, nil
}

// call sends one request and returns the answer's status and a copy of its body.
func call(client *fasthttp.HostClient, addr, method, path, bearer string, body any) (int, []byte, error) {
	req, res := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(res)
	req.Header.SetMethod(method)
	req.SetRequestURI(path)
	req.SetHost(addr)
	req.Header.Set("Authorization", bearer)
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		req.Header.SetContentType("application/json")
		req.SetBody(b)
	}
	if err := client.Do(req, res); err != nil {
		return 0, nil, err
	}
	return res.StatusCode(), append([]byte(nil), res.Body()...), nil
}

// seedQuota makes, in environment envID, a team with 100 deployed stacks of 10 executions
// (each with answers of its own) of a template whose machines declare resources, and two
// drafts of one machine that lacks its address: "draft" names no server, "draft-live" the
// sandbox's node pve1. It returns the team and a member's token.
func seedQuota(ctx context.Context, env *benchEnv, envID, server uuid.UUID) (uuid.UUID, string, error) {
	db := env.DB
	var team uuid.UUID
	if err := db.QueryRow(ctx, `INSERT INTO teams (name) VALUES ('quota') RETURNING id`).Scan(&team); err != nil {
		return team, "", err
	}
	member, err := userWithToken(ctx, env, "member", auth.RoleMember, []uuid.UUID{team})
	if err != nil {
		return team, "", err
	}
	def, err := template.Parse([]byte(`name: vm
phases:
  - name: vms
    jobs:
      - name: vm
        source: { repo: https://git.example.org/vm.git, branch: main, path: jobs/vm }
        machine: true
        executions: { multiple: true, min: 1, max: 20 }
        parameters:
          - { name: cores, type: integer, default: 1, minimum: 1 }
          - { name: memory_mb, type: integer, default: 1024, minimum: 256 }
        resources: { cores: { param: cores }, memory_mb: { param: memory_mb }, disk_gb: 20 }
`))
	if err != nil {
		return team, "", err
	}
	defJSON, err := json.Marshal(def)
	if err != nil {
		return team, "", err
	}
	commit := "0123456789abcdef0123456789abcdef01234567"
	tmpl, _, err := store.TemplateCreate(ctx, db, horizon.Template{Name: "vm", Active: true},
		horizon.TemplateVersion{Definition: defJSON, DefinitionHash: "bench", JobCommits: map[string]string{"vm": commit}, Modules: json.RawMessage(`{}`)})
	if err != nil {
		return team, "", err
	}
	seed := []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO stacks (team_id, name, environment_id, template_id, template_version, state, deployed_at)
		  SELECT $1, 'stack-' || i, $2, $3, 1, 'deployed', now() FROM generate_series(0, 99) i ORDER BY i`, []any{team, envID, tmpl.ID}},
		{`INSERT INTO executions (stack_id, job, index, config, commit, applied_hash)
		  SELECT s.id, 'vm', k, jsonb_build_object('parameters', jsonb_build_object('cores', 1 + k % 8, 'memory_mb', 512 + row_number() OVER ())), $1, 'h'
		  FROM stacks s, generate_series(0, 9) k ORDER BY s.id, k`, []any{commit}},
		{`INSERT INTO stacks (team_id, name, environment_id, template_id, template_version)
		  VALUES ($1, 'draft', $2, $3, 1), ($1, 'draft-live', $2, $3, 1)`, []any{team, envID, tmpl.ID}},
		{`INSERT INTO executions (stack_id, job, index, commit, config) SELECT id, 'vm', 0, $1,
		    CASE WHEN name = 'draft' THEN '{}'::jsonb ELSE jsonb_build_object('proxmox_server_id', $2::uuid, 'node', 'pve1', 'pool', 'dev') END
		  FROM stacks WHERE state = 'draft'`, []any{commit, server}},
		{`VACUUM ANALYZE stacks`, nil},
		{`VACUUM ANALYZE executions`, nil},
	}
	for i, q := range seed {
		if _, err := db.Exec(ctx, q.sql, q.args...); err != nil {
			return team, "", fmt.Errorf("seed statement %d: %w", i+1, err)
		}
	}
	var active int
	if err := db.QueryRow(ctx, `SELECT count(DISTINCT config) FROM executions e JOIN stacks s ON s.id = e.stack_id WHERE s.state = 'deployed'`).Scan(&active); err != nil {
		return team, "", err
	}
	if active != 1000 {
		return team, "", fmt.Errorf("seeded %d distinct active executions, want 1000", active)
	}
	return team, member, nil
}
