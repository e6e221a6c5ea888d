package isos

import (
	"github.com/gofiber/fiber/v2"

	"horizon/functions/api"
)

// Cancel interrupts the ISO's run in progress (api.CancelRun): the worker running a stage
// stops it and the Proxmox task it waits on, and the run ends canceled with the ISO failed.
func Cancel(d api.Deps) fiber.Handler { return api.CancelRun(d, runOwner) }
