package app

import (
	"github.com/gofiber/fiber/v2"

	"horizon/functions/activity"
	"horizon/functions/api"
	"horizon/functions/environments"
	"horizon/functions/gitcredentials"
	"horizon/functions/isos"
	"horizon/functions/isotemplates"
	"horizon/functions/live"
	"horizon/functions/logs"
	"horizon/functions/me"
	"horizon/functions/nagiosservers"
	"horizon/functions/networks"
	"horizon/functions/prometheus"
	"horizon/functions/proxmoxservers"
	"horizon/functions/sshkeys"
	"horizon/functions/stacks"
	"horizon/functions/startup"
	"horizon/functions/teams"
	"horizon/functions/templates"
	"horizon/functions/tokens"
	"horizon/functions/users"
	"horizon/shared/auth"
)

type route struct {
	method, path string
	handler      fiber.Handler
}

// streamRoute is a Server-Sent Events route: besides a bearer token it accepts a stream token
// of purpose in ?stream_token=.
type streamRoute struct {
	route
	purpose auth.StreamPurpose
}

// streamRoutes lists the /v1 event streams, and the stack and ISO log downloads, which the
// stream token of their log opens too. openapi.yaml describes them too.
func streamRoutes(d api.Deps) []streamRoute {
	return []streamRoute{
		{route{fiber.MethodGet, "/events", live.Events(d)}, auth.StreamEvents},
		{route{fiber.MethodGet, "/stacks/:id/logs/stream", logs.Stream(d)}, auth.StreamLogs},
		// The download too: a browser saves it through a plain link (it cannot send headers
		// either), straight to disk, instead of holding the whole log in memory.
		{route{fiber.MethodGet, "/stacks/:id/logs", logs.Download(d)}, auth.StreamLogs},
		{route{fiber.MethodGet, "/isos/:id/logs/stream", isos.GetLogStream(d)}, auth.StreamISOLogs},
		{route{fiber.MethodGet, "/isos/:id/logs", isos.GetLogs(d)}, auth.StreamISOLogs},
	}
}

// scopedRoute is a route that a token limited to scope (auth.TokenScope) opens too; full
// tokens open it like any other.
type scopedRoute struct {
	route
	scope auth.TokenScope
}

// scopedRoutes lists the /v1 routes that limited tokens open; a limited token opens no other.
// openapi.yaml describes them too.
func scopedRoutes(d api.Deps) []scopedRoute {
	return []scopedRoute{
		{route{fiber.MethodGet, "/prometheus/targets", prometheus.Targets(d)}, auth.TokenPrometheus},
	}
}

// routes lists every /v1 endpoint. openapi.yaml must describe exactly these (a test checks).
func routes(d api.Deps) []route {
	return []route{
		{fiber.MethodGet, "/me", me.Get(d)},

		{fiber.MethodPost, "/teams", teams.Create(d)},
		{fiber.MethodGet, "/teams", teams.List(d)},
		{fiber.MethodGet, "/teams/:id", teams.Get(d)},
		{fiber.MethodPatch, "/teams/:id", teams.Update(d)},

		{fiber.MethodPost, "/users", users.Create(d)},
		{fiber.MethodGet, "/users", users.List(d)},
		{fiber.MethodGet, "/users/:id", users.Get(d)},
		{fiber.MethodPatch, "/users/:id", users.Update(d)},

		{fiber.MethodPost, "/tokens", tokens.Create(d)},
		{fiber.MethodGet, "/tokens", tokens.List(d)},
		{fiber.MethodGet, "/tokens/:id", tokens.Get(d)},
		{fiber.MethodGet, "/activity", activity.List(d)},
		{fiber.MethodDelete, "/tokens/:id", tokens.Revoke(d)},

		{fiber.MethodPost, "/environments", environments.Create(d)},
		{fiber.MethodGet, "/environments", environments.List(d)},
		{fiber.MethodGet, "/environments/:id", environments.Get(d)},
		{fiber.MethodPatch, "/environments/:id", environments.Update(d)},

		{fiber.MethodPost, "/networks", networks.Create(d)},
		{fiber.MethodGet, "/networks", networks.List(d)},
		{fiber.MethodGet, "/networks/:id", networks.Get(d)},
		{fiber.MethodDelete, "/networks/:id", networks.Delete(d)},
		{fiber.MethodPost, "/networks/:id/addresses", networks.CreateAddress(d)},
		{fiber.MethodPost, "/networks/:id/address-ranges", networks.CreateRange(d)},
		{fiber.MethodGet, "/networks/:id/addresses", networks.ListAddresses(d)},
		{fiber.MethodGet, "/networks/:id/addresses/:address_id", networks.GetAddress(d)},
		{fiber.MethodDelete, "/networks/:id/addresses/:address_id", networks.DeleteAddress(d)},

		{fiber.MethodPost, "/ssh-keys", sshkeys.Create(d)},
		{fiber.MethodGet, "/ssh-keys", sshkeys.List(d)},
		{fiber.MethodGet, "/ssh-keys/:id", sshkeys.Get(d)},
		{fiber.MethodDelete, "/ssh-keys/:id", sshkeys.Delete(d)},

		{fiber.MethodPost, "/proxmox-servers", proxmoxservers.Create(d)},
		{fiber.MethodGet, "/proxmox-servers", proxmoxservers.List(d)},
		{fiber.MethodGet, "/proxmox-servers/:id", proxmoxservers.Get(d)},
		{fiber.MethodPatch, "/proxmox-servers/:id", proxmoxservers.Update(d)},
		{fiber.MethodDelete, "/proxmox-servers/:id", proxmoxservers.Delete(d)},
		{fiber.MethodPost, "/proxmox-servers/:id/refresh", proxmoxservers.Refresh(d)},

		{fiber.MethodPost, "/stacks", stacks.Create(d)},
		{fiber.MethodGet, "/stacks", stacks.List(d)},
		{fiber.MethodGet, "/stacks/:id", stacks.Get(d)},
		{fiber.MethodPatch, "/stacks/:id", stacks.Update(d)},
		{fiber.MethodDelete, "/stacks/:id", stacks.Remove(d)},
		{fiber.MethodPost, "/stacks/:id/plan", stacks.PlanEdit(d)},
		{fiber.MethodPost, "/stacks/:id/duplicate", stacks.Duplicate(d)},
		{fiber.MethodPost, "/stacks/:id/upgrade-template", stacks.UpgradeTemplate(d)},
		{fiber.MethodPost, "/stacks/:id/force-remove", stacks.ForceRemove(d)},
		{fiber.MethodGet, "/stacks/:id/abandon-manifest", stacks.GetAbandonManifest(d)},
		{fiber.MethodPost, "/stacks/:id/deploy", stacks.Deploy(d)},
		{fiber.MethodPost, "/stacks/:id/cancel", stacks.Cancel(d)},
		{fiber.MethodPost, "/stacks/:id/retry", stacks.Retry(d)},
		{fiber.MethodPost, "/stacks/:id/jobs/:job/executions/:n/run-again", stacks.RunAgain(d)},
		{fiber.MethodGet, "/stacks/:id/actions", stacks.GetActions(d)},
		{fiber.MethodPost, "/stacks/:id/actions/:name", stacks.RunAction(d)},
		{fiber.MethodGet, "/stacks/:id/action-instances", stacks.GetActionInstances(d)},
		{fiber.MethodDelete, "/stacks/:id/action-instances/:iid", stacks.UndoActionInstance(d)},
		{fiber.MethodGet, "/stacks/:id/pipeline", stacks.GetPipeline(d)},
		{fiber.MethodPost, "/stacks/:id/drift-check", stacks.CheckDrift(d)},
		{fiber.MethodPost, "/stacks/:id/drift/findings/:finding/accept", stacks.AcceptDrift(d)},
		{fiber.MethodGet, "/stacks/:id/outputs", stacks.GetOutputs(d)},
		{fiber.MethodPost, "/stacks/:id/outputs/:job/:n/:name/reveal", stacks.Reveal(d)},
		{fiber.MethodGet, "/stacks/:id/history", stacks.GetHistory(d)},
		{fiber.MethodGet, "/stacks/:id/runs", stacks.GetRuns(d)},
		{fiber.MethodGet, "/stacks/:id/runs/:run", stacks.GetRun(d)},
		{fiber.MethodPost, "/stacks/:id/runs/:run/outputs/:name/reveal", stacks.RevealActionOutput(d)},

		{fiber.MethodPost, "/stream-tokens", live.CreateToken(d)},

		{fiber.MethodGet, "/startup", startup.List(d)},

		{fiber.MethodPost, "/nagios-servers", nagiosservers.Create(d)},
		{fiber.MethodGet, "/nagios-servers", nagiosservers.List(d)},
		{fiber.MethodGet, "/nagios-servers/:id", nagiosservers.Get(d)},
		{fiber.MethodPatch, "/nagios-servers/:id", nagiosservers.Update(d)},
		{fiber.MethodDelete, "/nagios-servers/:id", nagiosservers.Delete(d)},
		{fiber.MethodPost, "/nagios-servers/:id/refresh", nagiosservers.Refresh(d)},

		{fiber.MethodPost, "/git-credentials", gitcredentials.Create(d)},
		{fiber.MethodGet, "/git-credentials", gitcredentials.List(d)},
		{fiber.MethodGet, "/git-credentials/:id", gitcredentials.Get(d)},
		{fiber.MethodDelete, "/git-credentials/:id", gitcredentials.Delete(d)},

		{fiber.MethodPost, "/templates", templates.Create(d)},
		{fiber.MethodGet, "/templates", templates.List(d)},
		{fiber.MethodGet, "/templates/:id", templates.Get(d)},
		{fiber.MethodPatch, "/templates/:id", templates.Update(d)},
		{fiber.MethodPost, "/templates/:id/versions", templates.CreateVersion(d)},
		{fiber.MethodGet, "/templates/:id/versions/:v", templates.GetVersion(d)},
		{fiber.MethodGet, "/templates/:id/versions/:v/form", templates.Form(d)},
		{fiber.MethodGet, "/templates/:id/versions/:v/changes", templates.Changes(d)},

		{fiber.MethodPost, "/iso-templates", isotemplates.Create(d)},
		{fiber.MethodGet, "/iso-templates", isotemplates.List(d)},
		{fiber.MethodGet, "/iso-templates/:id", isotemplates.Get(d)},
		{fiber.MethodPatch, "/iso-templates/:id", isotemplates.Update(d)},
		{fiber.MethodPost, "/iso-templates/:id/versions", isotemplates.CreateVersion(d)},
		{fiber.MethodGet, "/iso-templates/:id/versions/:v", isotemplates.GetVersion(d)},

		{fiber.MethodPost, "/isos", isos.Create(d)},
		{fiber.MethodGet, "/isos", isos.List(d)},
		{fiber.MethodGet, "/isos/:id", isos.Get(d)},
		{fiber.MethodPatch, "/isos/:id", isos.Update(d)},
		{fiber.MethodDelete, "/isos/:id", isos.Delete(d)},
		{fiber.MethodPost, "/isos/:id/retry", isos.Retry(d)},
		{fiber.MethodPost, "/isos/:id/cancel", isos.Cancel(d)},
		{fiber.MethodGet, "/isos/:id/runs", isos.GetRuns(d)},
	}
}
