package problem

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"

	"github.com/gofiber/fiber/v2"

	"horizon/shared/horizon"
)

// RequestIDLocal is the fiber.Ctx local holding the request id (set by the request-id
// middleware); the handler copies it into every problem.
const RequestIDLocal = "request_id"

// From maps any error to the problem the client sees.
func From(err error) *Problem {
	var p *Problem
	if errors.As(err, &p) {
		return p
	}
	var ve *horizon.ValidationError
	var ce *horizon.ConflictError
	var fe *fiber.Error
	switch {
	case errors.As(err, &ve):
		return Invalid(ve.Fields)
	case errors.As(err, &ce) && ce.Field != "":
		p := Conflict("Another object already has this %s.", ce.Field)
		p.Errors = []horizon.FieldError{{Field: ce.Field, Message: "is already taken"}}
		return p
	case errors.Is(err, horizon.ErrNotFound):
		return New(TypeNotFound, 404, "The object does not exist or is not visible to you.")
	case errors.Is(err, horizon.ErrStale):
		return Stale()
	case errors.Is(err, horizon.ErrBusy):
		return Busy("The object has work in progress; try again when it has finished.")
	case errors.Is(err, horizon.ErrConflict):
		return Conflict("The request conflicts with the current state of the object.")
	case errors.Is(err, horizon.ErrForbidden):
		return Forbidden("Your role does not allow this.")
	case errors.Is(err, context.DeadlineExceeded):
		return Unavailable(err, "The request took too long and was abandoned; retry later.")
	case dependencyDown(err):
		return Unavailable(err, "A service Horizon depends on does not answer right now; retry shortly.")
	case errors.As(err, &fe):
		return fromFiber(fe)
	}
	return Internal(err)
}

func fromFiber(fe *fiber.Error) *Problem {
	switch fe.Code {
	case fiber.StatusNotFound:
		return New(TypeNotFound, 404, "No such route.")
	case fiber.StatusMethodNotAllowed:
		return New(TypeMethodNotAllowed, 405, "This route does not accept this method.")
	case fiber.StatusRequestEntityTooLarge:
		return New(TypeTooLarge, 413, "The request body is larger than the limit of 1 MiB.")
	case fiber.StatusUnsupportedMediaType:
		return New(TypeUnsupportedMedia, 415, "Send the body as application/json.")
	case fiber.StatusBadRequest:
		return Malformed("The request could not be read.")
	case fiber.StatusRequestTimeout:
		return New(TypeMalformed, 408, "The request was not received in time.")
	}
	if fe.Code >= 500 {
		return Internal(fe)
	}
	return New(TypeMalformed, fe.Code, "%s", fe.Message)
}

// Handler returns the app's ErrorHandler: it writes the problem for err, logging 4xx at info
// and 5xx at error with the internal cause.
func Handler(log *slog.Logger) fiber.ErrorHandler {
	return func(c *fiber.Ctx, err error) error {
		p := *From(err) // a copy: problems may be shared values
		p.Instance = c.Path()
		if id, ok := c.Locals(RequestIDLocal).(string); ok {
			p.RequestID = id
		}
		attrs := []any{"status", p.Status, "type", string(p.Type), "method", c.Method(), "path", c.Path(), "request_id", p.RequestID}
		if p.Status >= 500 {
			log.ErrorContext(c.UserContext(), "request failed", append(attrs, "error", err)...)
		} else {
			log.InfoContext(c.UserContext(), "request rejected", append(attrs, "detail", p.Detail)...)
		}
		for k, v := range p.Headers {
			c.Set(k, v)
		}
		body, merr := json.Marshal(p)
		if merr != nil {
			return merr // cannot happen for this type; fasthttp then answers a bare 500
		}
		c.Set(fiber.HeaderContentType, ContentType)
		return c.Status(p.Status).Send(body)
	}
}
