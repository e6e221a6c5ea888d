package stacks

import (
	"github.com/gofiber/fiber/v2"

	"horizon/functions/api"
)

// Cancel interrupts the stack's run in progress (api.CancelRun): the worker running a step
// interrupts Terraform (it saves its state; nothing is rolled back), and the run ends canceled
// with the stack failed.
func Cancel(d api.Deps) fiber.Handler { return api.CancelRun(d, runOwner) }
