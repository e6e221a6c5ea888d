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
	"horizon/functions/signin"
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

// route is one /v1 endpoint, the narrowest token scope that opens it (auth.TokenScope: read
// for what only reads, deploy for starting and stopping work on a stack, full for the rest)
// and the least role its caller must have (api.Role). Both are checked before the handler
// runs; the handler checks what depends on the object (its team, its owner) through the store.
type route struct {
	method, path string
	handler      fiber.Handler
	scope        auth.TokenScope
	role         api.Role
}

// The scopes, short, so that each row of the tables below reads as one declaration.
const (
	prom   = auth.TokenPrometheus
	read   = auth.TokenRead
	deploy = auth.TokenDeploy
	full   = auth.TokenFull
)

// The roles, short for the same reason.
const (
	anyone = api.SignedIn
	member = api.Member
	admin  = api.Admin
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
		{route{fiber.MethodGet, "/events", live.Events(d), read, anyone}, auth.StreamEvents},
		{route{fiber.MethodGet, "/stacks/:id/logs/stream", logs.Stream(d), read, anyone}, auth.StreamLogs},
		// The download too: a browser saves it through a plain link (it cannot send headers
		// either), straight to disk, instead of holding the whole log in memory.
		{route{fiber.MethodGet, "/stacks/:id/logs", logs.Download(d), read, anyone}, auth.StreamLogs},
		{route{fiber.MethodGet, "/isos/:id/logs/stream", isos.GetLogStream(d), read, anyone}, auth.StreamISOLogs},
		{route{fiber.MethodGet, "/isos/:id/logs", isos.GetLogs(d), read, anyone}, auth.StreamISOLogs},
	}
}

// signInCodes is the minting of a sign-in code, which New registers outside the /v1 group (it
// skips idempotency; see there).
func signInCodes(d api.Deps) route {
	return route{fiber.MethodPost, "/sign-in-codes", signin.Mint(d), read, anyone}
}

// routes lists every /v1 endpoint. openapi.yaml must describe exactly these (a test checks).
func routes(d api.Deps) []route {
	return []route{
		{fiber.MethodGet, "/me", me.Get(d), read, anyone},
		{fiber.MethodGet, "/prometheus/targets", prometheus.Targets(d), prom, anyone},

		{fiber.MethodPost, "/teams", teams.Create(d), full, admin},
		{fiber.MethodGet, "/teams", teams.List(d), read, anyone},
		{fiber.MethodGet, "/teams/:id", teams.Get(d), read, anyone},
		{fiber.MethodPatch, "/teams/:id", teams.Update(d), full, admin},
		{fiber.MethodGet, "/teams/:id/quotas", teams.GetQuotas(d), read, anyone},
		{fiber.MethodPut, "/teams/:id/quotas", teams.PutQuotas(d), full, admin},
		{fiber.MethodPatch, "/teams/:id/quotas", teams.PatchQuotas(d), full, admin},
		{fiber.MethodGet, "/teams/:id/usage", teams.GetUsage(d), read, anyone},

		{fiber.MethodPost, "/users", users.Create(d), full, admin},
		{fiber.MethodGet, "/users", users.List(d), read, anyone},
		{fiber.MethodGet, "/users/:id", users.Get(d), read, anyone},
		{fiber.MethodPatch, "/users/:id", users.Update(d), full, admin},

		{fiber.MethodPost, "/tokens", tokens.Create(d), full, anyone},
		{fiber.MethodGet, "/tokens", tokens.List(d), read, anyone},
		{fiber.MethodGet, "/tokens/:id", tokens.Get(d), read, anyone},
		{fiber.MethodGet, "/activity", activity.List(d), read, anyone},
		{fiber.MethodDelete, "/tokens/:id", tokens.Revoke(d), full, anyone},

		{fiber.MethodPost, "/environments", environments.Create(d), full, admin},
		{fiber.MethodGet, "/environments", environments.List(d), read, anyone},
		{fiber.MethodGet, "/environments/:id", environments.Get(d), read, anyone},
		{fiber.MethodPatch, "/environments/:id", environments.Update(d), full, admin},

		{fiber.MethodPost, "/networks", networks.Create(d), full, admin},
		{fiber.MethodGet, "/networks", networks.List(d), read, anyone},
		{fiber.MethodGet, "/networks/:id", networks.Get(d), read, anyone},
		{fiber.MethodDelete, "/networks/:id", networks.Delete(d), full, admin},
		{fiber.MethodPost, "/networks/:id/addresses", networks.CreateAddress(d), full, admin},
		{fiber.MethodPost, "/networks/:id/address-ranges", networks.CreateRange(d), full, admin},
		{fiber.MethodGet, "/networks/:id/addresses", networks.ListAddresses(d), read, anyone},
		{fiber.MethodGet, "/networks/:id/addresses/:address_id", networks.GetAddress(d), read, anyone},
		{fiber.MethodDelete, "/networks/:id/addresses/:address_id", networks.DeleteAddress(d), full, admin},

		{fiber.MethodPost, "/ssh-keys", sshkeys.Create(d), full, member},
		{fiber.MethodGet, "/ssh-keys", sshkeys.List(d), read, anyone},
		{fiber.MethodGet, "/ssh-keys/:id", sshkeys.Get(d), read, anyone},
		{fiber.MethodDelete, "/ssh-keys/:id", sshkeys.Delete(d), full, member},

		{fiber.MethodPost, "/proxmox-servers", proxmoxservers.Create(d), full, admin},
		{fiber.MethodGet, "/proxmox-servers", proxmoxservers.List(d), read, anyone},
		{fiber.MethodGet, "/proxmox-servers/:id", proxmoxservers.Get(d), read, anyone},
		{fiber.MethodPatch, "/proxmox-servers/:id", proxmoxservers.Update(d), full, admin},
		{fiber.MethodDelete, "/proxmox-servers/:id", proxmoxservers.Delete(d), full, admin},
		{fiber.MethodPost, "/proxmox-servers/:id/refresh", proxmoxservers.Refresh(d), full, admin},

		{fiber.MethodPost, "/stacks", stacks.Create(d), full, member},
		{fiber.MethodGet, "/stacks", stacks.List(d), read, anyone},
		{fiber.MethodGet, "/stacks/:id", stacks.Get(d), read, anyone},
		{fiber.MethodPatch, "/stacks/:id", stacks.Update(d), full, member},
		{fiber.MethodDelete, "/stacks/:id", stacks.Remove(d), full, member},
		{fiber.MethodPost, "/stacks/:id/plan", stacks.PlanEdit(d), full, member},
		{fiber.MethodPost, "/stacks/:id/duplicate", stacks.Duplicate(d), full, member},
		{fiber.MethodPost, "/stacks/:id/upgrade-template", stacks.UpgradeTemplate(d), full, admin},
		{fiber.MethodPost, "/stacks/:id/force-remove", stacks.ForceRemove(d), full, admin},
		{fiber.MethodGet, "/stacks/:id/abandon-manifest", stacks.GetAbandonManifest(d), read, admin},
		{fiber.MethodPost, "/stacks/:id/deploy", stacks.Deploy(d), deploy, member},
		{fiber.MethodPost, "/stacks/:id/cancel", stacks.Cancel(d), deploy, member},
		{fiber.MethodPost, "/stacks/:id/retry", stacks.Retry(d), deploy, member},
		{fiber.MethodPost, "/stacks/:id/jobs/:job/executions/:n/run-again", stacks.RunAgain(d), deploy, member},
		{fiber.MethodGet, "/stacks/:id/actions", stacks.GetActions(d), read, anyone},
		{fiber.MethodPost, "/stacks/:id/actions/:name", stacks.RunAction(d), deploy, member},
		{fiber.MethodGet, "/stacks/:id/action-instances", stacks.GetActionInstances(d), read, anyone},
		{fiber.MethodDelete, "/stacks/:id/action-instances/:iid", stacks.UndoActionInstance(d), full, member},
		{fiber.MethodGet, "/stacks/:id/pipeline", stacks.GetPipeline(d), read, anyone},
		// A check only reads Proxmox: a deploy bot may ask for one; accepting a finding is an edit.
		{fiber.MethodPost, "/stacks/:id/drift-check", stacks.CheckDrift(d), deploy, member},
		{fiber.MethodPost, "/stacks/:id/drift/findings/:finding/accept", stacks.AcceptDrift(d), full, member},
		{fiber.MethodGet, "/stacks/:id/outputs", stacks.GetOutputs(d), read, anyone},
		{fiber.MethodPost, "/stacks/:id/outputs/:job/:n/:name/reveal", stacks.Reveal(d), full, member},
		{fiber.MethodGet, "/stacks/:id/history", stacks.GetHistory(d), read, anyone},
		{fiber.MethodGet, "/stacks/:id/runs", stacks.GetRuns(d), read, anyone},
		{fiber.MethodGet, "/stacks/:id/runs/:run", stacks.GetRun(d), read, anyone},
		{fiber.MethodPost, "/stacks/:id/runs/:run/outputs/:name/reveal", stacks.RevealActionOutput(d), full, member},

		{fiber.MethodPost, "/stream-tokens", live.CreateToken(d), read, anyone},

		{fiber.MethodGet, "/startup", startup.List(d), read, anyone},

		{fiber.MethodPost, "/nagios-servers", nagiosservers.Create(d), full, admin},
		{fiber.MethodGet, "/nagios-servers", nagiosservers.List(d), read, anyone},
		{fiber.MethodGet, "/nagios-servers/:id", nagiosservers.Get(d), read, anyone},
		{fiber.MethodPatch, "/nagios-servers/:id", nagiosservers.Update(d), full, admin},
		{fiber.MethodDelete, "/nagios-servers/:id", nagiosservers.Delete(d), full, admin},
		{fiber.MethodPost, "/nagios-servers/:id/refresh", nagiosservers.Refresh(d), full, admin},

		{fiber.MethodPost, "/git-credentials", gitcredentials.Create(d), full, admin},
		{fiber.MethodGet, "/git-credentials", gitcredentials.List(d), read, admin},
		{fiber.MethodGet, "/git-credentials/:id", gitcredentials.Get(d), read, admin},
		{fiber.MethodDelete, "/git-credentials/:id", gitcredentials.Delete(d), full, admin},

		{fiber.MethodPost, "/templates", templates.Create(d), full, admin},
		{fiber.MethodGet, "/templates", templates.List(d), read, anyone},
		{fiber.MethodGet, "/templates/:id", templates.Get(d), read, anyone},
		{fiber.MethodPatch, "/templates/:id", templates.Update(d), full, admin},
		{fiber.MethodPost, "/templates/:id/versions", templates.CreateVersion(d), full, admin},
		{fiber.MethodGet, "/templates/:id/versions/:v", templates.GetVersion(d), read, anyone},
		{fiber.MethodGet, "/templates/:id/versions/:v/form", templates.Form(d), read, anyone},
		{fiber.MethodGet, "/templates/:id/versions/:v/changes", templates.Changes(d), read, anyone},

		{fiber.MethodPost, "/iso-templates", isotemplates.Create(d), full, admin},
		{fiber.MethodGet, "/iso-templates", isotemplates.List(d), read, anyone},
		{fiber.MethodGet, "/iso-templates/:id", isotemplates.Get(d), read, anyone},
		{fiber.MethodPatch, "/iso-templates/:id", isotemplates.Update(d), full, admin},
		{fiber.MethodPost, "/iso-templates/:id/versions", isotemplates.CreateVersion(d), full, admin},
		{fiber.MethodGet, "/iso-templates/:id/versions/:v", isotemplates.GetVersion(d), read, anyone},

		{fiber.MethodPost, "/isos", isos.Create(d), full, admin},
		{fiber.MethodGet, "/isos", isos.List(d), read, anyone},
		{fiber.MethodGet, "/isos/:id", isos.Get(d), read, anyone},
		{fiber.MethodPatch, "/isos/:id", isos.Update(d), full, admin},
		{fiber.MethodDelete, "/isos/:id", isos.Delete(d), full, admin},
		{fiber.MethodPost, "/isos/:id/retry", isos.Retry(d), full, admin},
		{fiber.MethodPost, "/isos/:id/cancel", isos.Cancel(d), full, admin},
		{fiber.MethodGet, "/isos/:id/runs", isos.GetRuns(d), read, anyone},

		{fiber.MethodPost, "/webhooks", webhooks.Create(d), full, member},
		{fiber.MethodGet, "/webhooks", webhooks.List(d), read, anyone},
		{fiber.MethodGet, "/webhooks/:id", webhooks.Get(d), read, anyone},
		{fiber.MethodPatch, "/webhooks/:id", webhooks.Update(d), full, member},
		{fiber.MethodDelete, "/webhooks/:id", webhooks.Delete(d), full, member},
		{fiber.MethodPost, "/webhooks/:id/rotate-secret", webhooks.RotateSecret(d), full, member},
		{fiber.MethodPost, "/webhooks/:id/test", webhooks.Test(d), full, member},
		{fiber.MethodGet, "/webhooks/:id/deliveries", webhooks.ListDeliveries(d), read, anyone},
		{fiber.MethodPost, "/webhooks/:id/deliveries/:delivery_id/redeliver", webhooks.Redeliver(d), full, member},
	}
}
