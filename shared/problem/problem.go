// Package problem is the API's one error shape, application/problem+json (RFC 9457), with a
// stable type URI per kind of problem, and the Fiber error handler that turns every error a
// handler returns into one.
//
// Handlers return errors; they never write error bodies. Domain errors (horizon.ErrNotFound,
// ErrConflict, ErrBusy, ErrStale, *horizon.ValidationError) are mapped here, in one place; any
// other error becomes a 500 whose detail says nothing internal, while the log gets the cause.
package problem

import (
	"fmt"

	"github.com/google/uuid"

	"horizon/shared/horizon"
)

// ContentType is the media type of every error response.
const ContentType = "application/problem+json"

// Type is the stable identifier of a kind of problem; clients branch on it. Every Type is listed
// in openapi.yaml.
type Type string

// The problem types Horizon answers with.
const (
	TypeMalformed            Type = "urn:horizon:problem:malformed-request"
	TypeUnauthenticated      Type = "urn:horizon:problem:unauthenticated"
	TypeForbidden            Type = "urn:horizon:problem:forbidden"
	TypeNotFound             Type = "urn:horizon:problem:not-found"
	TypeMethodNotAllowed     Type = "urn:horizon:problem:method-not-allowed"
	TypeConflict             Type = "urn:horizon:problem:conflict"
	TypeBusy                 Type = "urn:horizon:problem:busy"
	TypeIdempotencyInFlight  Type = "urn:horizon:problem:idempotency-in-progress"
	TypeStale                Type = "urn:horizon:problem:stale"
	TypePreconditionRequired Type = "urn:horizon:problem:precondition-required"
	TypeTooLarge             Type = "urn:horizon:problem:too-large"
	TypeUnsupportedMedia     Type = "urn:horizon:problem:unsupported-media-type"
	TypeNotAcceptable        Type = "urn:horizon:problem:not-acceptable"
	TypeInvalid              Type = "urn:horizon:problem:invalid"
	TypeIdempotencyReused    Type = "urn:horizon:problem:idempotency-key-reused"
	TypeRateLimited          Type = "urn:horizon:problem:rate-limited"
	TypeInternal             Type = "urn:horizon:problem:internal"
	TypeUnavailable          Type = "urn:horizon:problem:unavailable"
)

var titles = map[Type]string{
	TypeMalformed:            "Malformed request",
	TypeUnauthenticated:      "Authentication required",
	TypeForbidden:            "Not allowed",
	TypeNotFound:             "Not found",
	TypeMethodNotAllowed:     "Method not allowed",
	TypeConflict:             "Conflict",
	TypeBusy:                 "Busy",
	TypeIdempotencyInFlight:  "Request in progress",
	TypeStale:                "Stale version",
	TypePreconditionRequired: "Precondition required",
	TypeTooLarge:             "Request too large",
	TypeUnsupportedMedia:     "Unsupported media type",
	TypeNotAcceptable:        "Not acceptable",
	TypeInvalid:              "Invalid input",
	TypeIdempotencyReused:    "Idempotency key reused",
	TypeRateLimited:          "Too many requests",
	TypeInternal:             "Internal error",
	TypeUnavailable:          "Service unavailable",
}

// Problem is an RFC 9457 problem detail. It is also an error, so handlers return it.
type Problem struct {
	Type     Type                 `json:"type"`
	Title    string               `json:"title"`
	Status   int                  `json:"status"`
	Detail   string               `json:"detail,omitempty"`
	Instance string               `json:"instance,omitempty"`
	Errors   []horizon.FieldError `json:"errors,omitempty"`
	// RequestID lets a user quote the request to an operator.
	RequestID string `json:"request_id,omitempty"`
	// Stacks is an extension member: the stacks the problem is about (e.g. those that use an ISO
	// that cannot be deleted), so that a client links to them. Only stacks the caller may see.
	Stacks []StackRef `json:"stacks,omitempty"`

	// Headers are sent with the response (e.g. Retry-After); not part of the body.
	Headers map[string]string `json:"-"`
	// cause is the internal error behind a 5xx, for the log only.
	cause error
}

func (p *Problem) Error() string {
	if p.cause != nil {
		return fmt.Sprintf("%s: %s: %v", p.Title, p.Detail, p.cause)
	}
	return p.Title + ": " + p.Detail
}

func (p *Problem) Unwrap() error { return p.cause }

// StackRef names a stack in a problem's stacks member.
type StackRef struct {
	ID   uuid.UUID `json:"id"`
	Name string    `json:"name"`
}

// New returns a problem of type t with status and a detail sentence.
func New(t Type, status int, format string, args ...any) *Problem {
	return &Problem{Type: t, Title: titles[t], Status: status, Detail: fmt.Sprintf(format, args...)}
}

// Malformed is a 400: the request could not be read (bad JSON, bad path or query syntax).
func Malformed(format string, args ...any) *Problem {
	return New(TypeMalformed, 400, format, args...)
}

// Unauthenticated is a 401.
func Unauthenticated(detail string) *Problem {
	p := New(TypeUnauthenticated, 401, "%s", detail)
	p.Headers = map[string]string{"WWW-Authenticate": `Bearer realm="horizon"`}
	return p
}

// Forbidden is a 403.
func Forbidden(format string, args ...any) *Problem {
	return New(TypeForbidden, 403, format, args...)
}

// NotFound is a 404.
func NotFound(what string) *Problem {
	return New(TypeNotFound, 404, "%s does not exist or is not visible to you.", what)
}

// Conflict is a 409 about an existing value.
func Conflict(format string, args ...any) *Problem {
	return New(TypeConflict, 409, format, args...)
}

// Busy is a 409: the object has work in progress.
func Busy(format string, args ...any) *Problem {
	return New(TypeBusy, 409, format, args...)
}

// Stale is a 412.
func Stale() *Problem {
	return New(TypeStale, 412, "The object changed since you read it; fetch it again and retry with its current ETag.")
}

// Invalid is a 422 listing every field problem.
func Invalid(fields []horizon.FieldError) *Problem {
	p := New(TypeInvalid, 422, "The request has %d invalid field(s); see errors.", len(fields))
	p.Errors = fields
	return p
}

// InvalidField is a 422 about one field.
func InvalidField(field, format string, args ...any) *Problem {
	return Invalid([]horizon.FieldError{{Field: field, Message: fmt.Sprintf(format, args...)}})
}

// Internal is a 500 whose cause goes to the log, never to the client.
func Internal(cause error) *Problem {
	p := New(TypeInternal, 500, "Something went wrong on our side; quote the request id to an operator.")
	p.cause = cause
	return p
}

// Unavailable is a 503 (a dependency does not answer), with Retry-After.
func Unavailable(cause error, format string, args ...any) *Problem {
	p := New(TypeUnavailable, 503, format, args...)
	p.cause = cause
	p.Headers = map[string]string{"Retry-After": retryAfter}
	return p
}
