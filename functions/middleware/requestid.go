package middleware

import (
	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"horizon/shared/problem"
)

// HeaderRequestID carries the request id in both directions.
const HeaderRequestID = "X-Request-Id"

// RequestID takes the client's X-Request-Id when it is a sane token, or makes one, stores it for
// the error handler and the logs, and echoes it on the response.
func RequestID() fiber.Handler {
	return func(c *fiber.Ctx) error {
		id := c.Get(HeaderRequestID)
		if !saneRequestID(id) {
			id = uuid.NewString()
		} else {
			id = string([]byte(id)) // copy: fasthttp reuses the header buffer
		}
		c.Locals(problem.RequestIDLocal, id)
		c.Set(HeaderRequestID, id)
		return c.Next()
	}
}

func saneRequestID(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		if !(b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '-' || b == '_' || b == '.') {
			return false
		}
	}
	return true
}
