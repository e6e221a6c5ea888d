package middleware

import "github.com/gofiber/fiber/v2"

// NoSniff marks every answer X-Content-Type-Options: nosniff, errors included, so that a
// browser never second-guesses a Content-Type: a log download or a problem body is never run
// as a script or rendered as a page, whatever it holds.
func NoSniff() fiber.Handler {
	return func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
		return c.Next()
	}
}
