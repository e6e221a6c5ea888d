package middleware

import (
	"strconv"
	"sync/atomic"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"horizon/shared/problem"
)

// HeaderRequestID carries the request id in both directions.
const HeaderRequestID = "X-Request-Id"

// RequestID takes the client's X-Request-Id when it is a sane token, or makes one, stores it for
// the error handler and the logs, and echoes it on the response.
//
// Generated ids are a random per-process prefix and a counter: unique across replicas with
// overwhelming probability, and far cheaper than a random UUID per request.
func RequestID() fiber.Handler {
	prefix := uuid.NewString()[:8]
	var n atomic.Uint64
	return func(c *fiber.Ctx) error {
		id := c.Get(HeaderRequestID)
		if !saneRequestID(id) {
			id = prefix + "-" + strconv.FormatUint(n.Add(1), 36)
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
