// Package prometheus serves GET /v1/prometheus/targets: the machines that run Node Exporter,
// in the format of Prometheus's HTTP service discovery (http_sd_configs), so that every
// Prometheus finds the machines Horizon builds without a file to keep in sync.
//
// The answer is a JSON array with one target group per machine: its address and Node
// Exporter's port ("10.0.0.5:9100") and labels named __meta_horizon_* only, which Prometheus
// drops after relabelling unless a relabel_config copies them (deploy/README.md shows the scrape
// configuration). A machine is listed once it is built — its first apply succeeded — and while
// its stack is deploying, deployed, updating or failed; never for a draft, nor once its removal
// is planned. Node Exporter is chosen per execution (node_exporter); cloud-init installs it.
//
// Prometheus replaces its whole target list with every answer and keeps the previous one when
// a refresh fails, so the list is read in one statement and served whole: an error is a 5xx
// problem, never a shorter list that would make Prometheus drop machines. It is polled every
// refresh_interval by every Prometheus, so it costs one query whatever the number of machines.
//
// Any full token may read it (a user's own teams, every team for an admin); the token meant for
// a Prometheus server is minted with scope "prometheus" (POST /v1/tokens), which opens this
// route and nothing else. Its user's teams bound what it sees, as for any token: an admin's
// sees every team, a viewer's only the viewer's teams.
package prometheus

import (
	"context"

	"net"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"horizon/functions/api"
	"horizon/shared/problem"
	"horizon/shared/store"
)

// NodeExporterPort is where Debian's prometheus-node-exporter listens (the package cloud-init
// installs).
const NodeExporterPort = 9100

// Group is one target group of Prometheus's HTTP SD format.
type Group struct {
	Targets []string          `json:"targets"`
	Labels  map[string]string `json:"labels"`
}

// The labels of a target group. Labels is the stack's labels joined as ",a,b," (",," for none),
// as Prometheus's own discoveries join tags, so that a regex like ".*,web,.*" tests one.
const (
	LabelStack         = "__meta_horizon_stack"
	LabelStackID       = "__meta_horizon_stack_id"
	LabelTeam          = "__meta_horizon_team"
	LabelEnvironment   = "__meta_horizon_environment"
	LabelJob           = "__meta_horizon_job"
	LabelExecution     = "__meta_horizon_execution"
	LabelNode          = "__meta_horizon_node"
	LabelProxmoxServer = "__meta_horizon_proxmox_server"
	LabelVMName        = "__meta_horizon_vm_name"
	LabelLabels        = "__meta_horizon_labels"
)

// maxLabelFilters bounds the ?label= filters (a stack carries at most 32 labels).
const (
	maxLabelFilters = 32
	maxLabelLength  = 64
)

// Targets serves the target groups the caller may see, filtered by ?team_id=,
// ?environment_id=, ?stack_id= and ?label= (repeatable: the stack carries every one).
func Targets(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[api.None]) error {
		var f store.NodeExporterFilter
		var err error
		if f.TeamID, err = api.QueryID(c, "team_id"); err != nil {
			return err
		}
		if f.EnvironmentID, err = api.QueryID(c, "environment_id"); err != nil {
			return err
		}
		if f.StackID, err = api.QueryID(c, "stack_id"); err != nil {
			return err
		}
		for _, l := range c.Context().QueryArgs().PeekMulti("label") {
			if len(l) == 0 || len(l) > maxLabelLength {
				return problem.Malformed("The query parameter label must be a stack label of 1 to %d bytes.", maxLabelLength)
			}
			f.Labels = append(f.Labels, string(l))
		}
		if len(f.Labels) > maxLabelFilters {
			return problem.Malformed("At most %d label filters may be given.", maxLabelFilters)
		}
		ms, err := store.NodeExporterMachines(ctx, d.DB, r.Who.Scope(), f)
		if err != nil {
			return err
		}
		groups := make([]Group, len(ms))
		for i, m := range ms {
			groups[i] = Group{
				Targets: []string{net.JoinHostPort(m.IP, strconv.Itoa(NodeExporterPort))},
				Labels: map[string]string{
					LabelStack:         m.Stack,
					LabelStackID:       m.StackID.String(),
					LabelTeam:          m.Team,
					LabelEnvironment:   m.Environment,
					LabelJob:           m.Job,
					LabelExecution:     strconv.Itoa(m.Index),
					LabelNode:          m.Node,
					LabelProxmoxServer: m.ProxmoxServer,
					LabelVMName:        m.VMName,
					LabelLabels:        "," + strings.Join(m.Labels, ",") + ",",
				},
			}
		}
		return c.JSON(groups)
	})
}
