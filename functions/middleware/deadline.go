package middleware

import (
	"context"
	"time"

	"github.com/gofiber/fiber/v2"
)

// Deadline gives each request a context with a deadline (HORIZON_REQUEST_TIMEOUT). Fiber hands
// out context.Background() otherwise, and fasthttp does not cancel on client disconnect, so this
// is what bounds a handler's database and Redis calls.
func Deadline(d time.Duration) fiber.Handler {
	return func(c *fiber.Ctx) error {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		c.SetUserContext(ctx)
		return c.Next()
	}
}
