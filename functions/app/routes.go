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
	"horizon/functions/webhooks"
	"horizon/shared/auth"
)

// route is one /v1 endpoint and the narrowest token scope that opens it (auth.TokenScope:
// read for what only reads, deploy for starting and stopping work on a stack, full for the
// rest). The user's role and teams are checked by the handler in every case.
type route struct {
	method, path string
	handler      fiber.Handler
	scope        auth.TokenScope
}

// The scopes, short, so that each row of the tables below reads as one declaration.
const (
	prom   = auth.TokenPrometheus
	read   = auth.TokenRead
	deploy = auth.TokenDeploy
	full   = auth.TokenFull
)

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
		{route{fiber.MethodGet, "/events", live.Events(d), read}, auth.StreamEvents},
		{route{fiber.MethodGet, "/stacks/:id/logs/stream", logs.Stream(d), read}, auth.StreamLogs},
		// The download too: a browser saves it through a plain link (it cannot send headers
		// either), straight to disk, instead of holding the whole log in memory.
		{route{fiber.MethodGet, "/stacks/:id/logs", logs.Download(d), read}, auth.StreamLogs},
		{route{fiber.MethodGet, "/isos/:id/logs/stream", isos.GetLogStream(d), read}, auth.StreamISOLogs},
		{route{fiber.MethodGet, "/isos/:id/logs", isos.GetLogs(d), read}, auth.StreamISOLogs},
	}
}

// routes lists every /v1 endpoint. openapi.yaml must describe exactly these (a test checks).
func routes(d api.Deps) []route {
	return []route{
		{fiber.MethodGet, "/me", me.Get(d), read},
		{fiber.MethodGet, "/prometheus/targets", prometheus.Targets(d), prom},

		{fiber.MethodPost, "/teams", teams.Create(d), full},
		{fiber.MethodGet, "/teams", teams.List(d), read},
		{fiber.MethodGet, "/teams/:id", teams.Get(d), read},
		{fiber.MethodPatch, "/teams/:id", teams.Update(d), full},
		{fiber.MethodGet, "/teams/:id/quotas", teams.GetQuotas(d), read},
		{fiber.MethodPut, "/teams/:id/quotas", teams.PutQuotas(d), full},
		{fiber.MethodPatch, "/teams/:id/quotas", teams.PatchQuotas(d), full},
		{fiber.MethodGet, "/teams/:id/usage", teams.GetUsage(d), read},

		{fiber.MethodPost, "/users", users.Create(d), full},
		{fiber.MethodGet, "/users", users.List(d), read},
		{fiber.MethodGet, "/users/:id", users.Get(d), read},
		{fiber.MethodPatch, "/users/:id", users.Update(d), full},

		{fiber.MethodPost, "/tokens", tokens.Create(d), full},
		{fiber.MethodGet, "/tokens", tokens.List(d), read},
		{fiber.MethodGet, "/tokens/:id", tokens.Get(d), read},
		{fiber.MethodGet, "/activity", activity.List(d), read},
		{fiber.MethodDelete, "/tokens/:id", tokens.Revoke(d), full},

		{fiber.MethodPost, "/environments", environments.Create(d), full},
		{fiber.MethodGet, "/environments", environments.List(d), read},
		{fiber.MethodGet, "/environments/:id", environments.Get(d), read},
		{fiber.MethodPatch, "/environments/:id", environments.Update(d), full},

		{fiber.MethodPost, "/networks", networks.Create(d), full},
		{fiber.MethodGet, "/networks", networks.List(d), read},
		{fiber.MethodGet, "/networks/:id", networks.Get(d), read},
		{fiber.MethodDelete, "/networks/:id", networks.Delete(d), full},
		{fiber.MethodPost, "/networks/:id/addresses", networks.CreateAddress(d), full},
		{fiber.MethodPost, "/networks/:id/address-ranges", networks.CreateRange(d), full},
		{fiber.MethodGet, "/networks/:id/addresses", networks.ListAddresses(d), read},
		{fiber.MethodGet, "/networks/:id/addresses/:address_id", networks.GetAddress(d), read},
		{fiber.MethodDelete, "/networks/:id/addresses/:address_id", networks.DeleteAddress(d), full},

		{fiber.MethodPost, "/ssh-keys", sshkeys.Create(d), full},
		{fiber.MethodGet, "/ssh-keys", sshkeys.List(d), read},
		{fiber.MethodGet, "/ssh-keys/:id", sshkeys.Get(d), read},
		{fiber.MethodDelete, "/ssh-keys/:id", sshkeys.Delete(d), full},

		{fiber.MethodPost, "/proxmox-servers", proxmoxservers.Create(d), full},
		{fiber.MethodGet, "/proxmox-servers", proxmoxservers.List(d), read},
		{fiber.MethodGet, "/proxmox-servers/:id", proxmoxservers.Get(d), read},
		{fiber.MethodPatch, "/proxmox-servers/:id", proxmoxservers.Update(d), full},
		{fiber.MethodDelete, "/proxmox-servers/:id", proxmoxservers.Delete(d), full},
		{fiber.MethodPost, "/proxmox-servers/:id/refresh", proxmoxservers.Refresh(d), full},

		{fiber.MethodPost, "/stacks", stacks.Create(d), full},
		{fiber.MethodGet, "/stacks", stacks.List(d), read},
		{fiber.MethodGet, "/stacks/:id", stacks.Get(d), read},
		{fiber.MethodPatch, "/stacks/:id", stacks.Update(d), full},
		{fiber.MethodDelete, "/stacks/:id", stacks.Remove(d), full},
		{fiber.MethodPost, "/stacks/:id/plan", stacks.PlanEdit(d), full},
		{fiber.MethodPost, "/stacks/:id/duplicate", stacks.Duplicate(d), full},
		{fiber.MethodPost, "/stacks/:id/upgrade-template", stacks.UpgradeTemplate(d), full},
		{fiber.MethodPost, "/stacks/:id/force-remove", stacks.ForceRemove(d), full},
		{fiber.MethodGet, "/stacks/:id/abandon-manifest", stacks.GetAbandonManifest(d), read},
		{fiber.MethodPost, "/stacks/:id/deploy", stacks.Deploy(d), deploy},
		{fiber.MethodPost, "/stacks/:id/cancel", stacks.Cancel(d), deploy},
		{fiber.MethodPost, "/stacks/:id/retry", stacks.Retry(d), deploy},
		{fiber.MethodPost, "/stacks/:id/jobs/:job/executions/:n/run-again", stacks.RunAgain(d), deploy},
		{fiber.MethodGet, "/stacks/:id/actions", stacks.GetActions(d), read},
		{fiber.MethodPost, "/stacks/:id/actions/:name", stacks.RunAction(d), deploy},
		{fiber.MethodGet, "/stacks/:id/action-instances", stacks.GetActionInstances(d), read},
		{fiber.MethodDelete, "/stacks/:id/action-instances/:iid", stacks.UndoActionInstance(d), full},
		{fiber.MethodGet, "/stacks/:id/pipeline", stacks.GetPipeline(d), read},
		// A check only reads Proxmox: a deploy bot may ask for one; accepting a finding is an edit.
		{fiber.MethodPost, "/stacks/:id/drift-check", stacks.CheckDrift(d), deploy},
		{fiber.MethodPost, "/stacks/:id/drift/findings/:finding/accept", stacks.AcceptDrift(d), full},
		{fiber.MethodGet, "/stacks/:id/outputs", stacks.GetOutputs(d), read},
		{fiber.MethodPost, "/stacks/:id/outputs/:job/:n/:name/reveal", stacks.Reveal(d), full},
		{fiber.MethodGet, "/stacks/:id/history", stacks.GetHistory(d), read},
		{fiber.MethodGet, "/stacks/:id/runs", stacks.GetRuns(d), read},
		{fiber.MethodGet, "/stacks/:id/runs/:run", stacks.GetRun(d), read},
		{fiber.MethodPost, "/stacks/:id/runs/:run/outputs/:name/reveal", stacks.RevealActionOutput(d), full},

		{fiber.MethodPost, "/stream-tokens", live.CreateToken(d), read},

		{fiber.MethodGet, "/startup", startup.List(d), read},

		{fiber.MethodPost, "/nagios-servers", nagiosservers.Create(d), full},
		{fiber.MethodGet, "/nagios-servers", nagiosservers.List(d), read},
		{fiber.MethodGet, "/nagios-servers/:id", nagiosservers.Get(d), read},
		{fiber.MethodPatch, "/nagios-servers/:id", nagiosservers.Update(d), full},
		{fiber.MethodDelete, "/nagios-servers/:id", nagiosservers.Delete(d), full},
		{fiber.MethodPost, "/nagios-servers/:id/refresh", nagiosservers.Refresh(d), full},

		{fiber.MethodPost, "/git-credentials", gitcredentials.Create(d), full},
		{fiber.MethodGet, "/git-credentials", gitcredentials.List(d), read},
		{fiber.MethodGet, "/git-credentials/:id", gitcredentials.Get(d), read},
		{fiber.MethodDelete, "/git-credentials/:id", gitcredentials.Delete(d), full},

		{fiber.MethodPost, "/templates", templates.Create(d), full},
		{fiber.MethodGet, "/templates", templates.List(d), read},
		{fiber.MethodGet, "/templates/:id", templates.Get(d), read},
		{fiber.MethodPatch, "/templates/:id", templates.Update(d), full},
		{fiber.MethodPost, "/templates/:id/versions", templates.CreateVersion(d), full},
		{fiber.MethodGet, "/templates/:id/versions/:v", templates.GetVersion(d), read},
		{fiber.MethodGet, "/templates/:id/versions/:v/form", templates.Form(d), read},
		{fiber.MethodGet, "/templates/:id/versions/:v/changes", templates.Changes(d), read},

		{fiber.MethodPost, "/iso-templates", isotemplates.Create(d), full},
		{fiber.MethodGet, "/iso-templates", isotemplates.List(d), read},
		{fiber.MethodGet, "/iso-templates/:id", isotemplates.Get(d), read},
		{fiber.MethodPatch, "/iso-templates/:id", isotemplates.Update(d), full},
		{fiber.MethodPost, "/iso-templates/:id/versions", isotemplates.CreateVersion(d), full},
		{fiber.MethodGet, "/iso-templates/:id/versions/:v", isotemplates.GetVersion(d), read},

		{fiber.MethodPost, "/isos", isos.Create(d), full},
		{fiber.MethodGet, "/isos", isos.List(d), read},
		{fiber.MethodGet, "/isos/:id", isos.Get(d), read},
		{fiber.MethodPatch, "/isos/:id", isos.Update(d), full},
		{fiber.MethodDelete, "/isos/:id", isos.Delete(d), full},
		{fiber.MethodPost, "/isos/:id/retry", isos.Retry(d), full},
		{fiber.MethodPost, "/isos/:id/cancel", isos.Cancel(d), full},
		{fiber.MethodGet, "/isos/:id/runs", isos.GetRuns(d), read},

		{fiber.MethodPost, "/webhooks", webhooks.Create(d), full},
		{fiber.MethodGet, "/webhooks", webhooks.List(d), read},
		{fiber.MethodGet, "/webhooks/:id", webhooks.Get(d), read},
		{fiber.MethodPatch, "/webhooks/:id", webhooks.Update(d), full},
		{fiber.MethodDelete, "/webhooks/:id", webhooks.Delete(d), full},
		{fiber.MethodPost, "/webhooks/:id/rotate-secret", webhooks.RotateSecret(d), full},
		{fiber.MethodPost, "/webhooks/:id/test", webhooks.Test(d), full},
		{fiber.MethodGet, "/webhooks/:id/deliveries", webhooks.ListDeliveries(d), read},
		{fiber.MethodPost, "/webhooks/:id/deliveries/:delivery_id/redeliver", webhooks.Redeliver(d), full},
	}
}
