package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"strings"

	"github.com/gofiber/fiber/v2"

	"horizon/shared/problem"
)

// Decode reads the request body strictly into a T: the body must be application/json, one JSON
// value, with no field T does not declare (unknown fields are how clients would otherwise set
// id, state or team_id). Syntax errors are 400; type errors, unknown fields and null for a Field
// that is not nullable are 422 naming the field.
func Decode[T any](c *fiber.Ctx) (T, error) {
	var v T
	if ct := c.Get(fiber.HeaderContentType); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != fiber.MIMEApplicationJSON && !strings.HasSuffix(mt, "+json")) {
			return v, problem.New(problem.TypeUnsupportedMedia, 415, "Send the body as application/json.")
		}
	}
	body := c.Body()
	if len(bytes.TrimSpace(body)) == 0 {
		return v, problem.Malformed("The request needs a JSON body.")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return v, decodeProblem(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return v, problem.Malformed("The body holds more than one JSON value.")
	}
	return v, nil
}

// DecodeOptional is Decode for a body that may be left out: an empty body gives the zero T.
func DecodeOptional[T any](c *fiber.Ctx) (T, error) {
	if len(bytes.TrimSpace(c.Body())) == 0 {
		var v T
		return v, nil
	}
	return Decode[T](c)
}

func decodeProblem(err error) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return problem.Malformed("The body is not valid JSON (at byte %d).", syntax.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return problem.Malformed("The body is not valid JSON (it ends early).")
	case errors.As(err, &typ) && typ.Value == "null":
		// Only a Field that is not nullable refuses null (encoding/json ignores it elsewhere).
		return problem.InvalidField(typ.Field, "cannot be null; leave the field out instead")
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			return problem.InvalidField("", "must be %s", jsonKind(typ.Type.Kind().String()))
		}
		return problem.InvalidField(field, "must be %s, not %s", jsonKind(typ.Type.Kind().String()), typ.Value)
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return problem.InvalidField(strings.Trim(name, `"`), "is not a field of this request")
	}
	return problem.Malformed("The body could not be read: %s.", sanitize(err.Error()))
}

// jsonKind names a Go kind the way a JSON client thinks of it.
func jsonKind(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "an integer"
	case "float32", "float64":
		return "a number"
	case "slice", "array":
		return "an array"
	case "map", "struct":
		return "an object"
	}
	return "a different type"
}

func sanitize(s string) string {
	s = strings.TrimPrefix(s, "json: ")
	if len(s) > 200 {
		s = s[:200]
	}
	return fmt.Sprintf("%q", s)
}
