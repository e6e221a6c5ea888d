package api_test

import (
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"

	"horizon/functions/api"
	"horizon/shared/problem"
)

type decodeTarget struct {
	Name  string   `json:"name"`
	Count int      `json:"count"`
	Tags  []string `json:"tags"`
}

// run calls f inside a real Fiber request carrying the body, content type and headers given,
// and returns what f returned.
func run[T any](t *testing.T, contentType, body string, headers map[string]string, f func(*fiber.Ctx) (T, error)) (T, error) {
	t.Helper()
	var got T
	var err error
	app := fiber.New()
	app.Post("/", func(c *fiber.Ctx) error { got, err = f(c); return nil })
	req := httptest.NewRequest("POST", "/", strings.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	if _, terr := app.Test(req); terr != nil {
		t.Fatal(terr)
	}
	return got, err
}

func TestDecode(t *testing.T) {
	for _, c := range []struct {
		name, contentType, body string
		status                  int    // 0: no error
		field                   string // the field the 422 names
		want                    decodeTarget
	}{
		{name: "valid", contentType: "application/json", body: `{"name":"a","count":2,"tags":["x"]}`, want: decodeTarget{Name: "a", Count: 2, Tags: []string{"x"}}},
		{name: "json with charset", contentType: "application/json; charset=utf-8", body: `{"name":"a"}`, want: decodeTarget{Name: "a"}},
		{name: "merge-patch+json", contentType: "application/merge-patch+json", body: `{"count":1}`, want: decodeTarget{Count: 1}},
		{name: "no content type", body: `{"name":"a"}`, want: decodeTarget{Name: "a"}},
		{name: "form content type", contentType: "application/x-www-form-urlencoded", body: `name=a`, status: 415},
		{name: "empty body", contentType: "application/json", body: "  \n", status: 400},
		{name: "syntax error", contentType: "application/json", body: `{"name":}`, status: 400},
		{name: "ends early", contentType: "application/json", body: `{"name":"a"`, status: 400},
		{name: "two values", contentType: "application/json", body: `{"name":"a"} {}`, status: 400},
		{name: "unknown field", contentType: "application/json", body: `{"name":"a","state":"deployed"}`, status: 422, field: "state"},
		{name: "wrong type", contentType: "application/json", body: `{"count":"two"}`, status: 422, field: "count"},
		{name: "not an object", contentType: "application/json", body: `[1]`, status: 422},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := run(t, c.contentType, c.body, nil, api.Decode[decodeTarget])
			if c.status == 0 {
				if err != nil {
					t.Fatalf("Decode: %v", err)
				}
				if got.Name != c.want.Name || got.Count != c.want.Count || strings.Join(got.Tags, ",") != strings.Join(c.want.Tags, ",") {
					t.Fatalf("Decode = %+v, want %+v", got, c.want)
				}
				return
			}
			var p *problem.Problem
			if !errors.As(err, &p) || p.Status != c.status {
				t.Fatalf("Decode error = %v, want a %d problem", err, c.status)
			}
			if c.field != "" && (len(p.Errors) != 1 || p.Errors[0].Field != c.field) {
				t.Fatalf("Decode errors = %+v, want one naming %q", p.Errors, c.field)
			}
		})
	}
}

func TestDecodeOptionalTakesAnEmptyBody(t *testing.T) {
	got, err := run(t, "application/json", "", nil, api.DecodeOptional[decodeTarget])
	if err != nil || got.Name != "" || got.Count != 0 {
		t.Fatalf("DecodeOptional(empty) = %+v, %v; want the zero value", got, err)
	}
	if _, err := run(t, "application/json", `{"nope":1}`, nil, api.DecodeOptional[decodeTarget]); err == nil {
		t.Fatal("DecodeOptional accepted an unknown field")
	}
}

func TestIfMatch(t *testing.T) {
	for _, c := range []struct {
		header string
		want   int64
		stale  bool
	}{
		{header: "", want: 0},
		{header: "*", want: 0},
		{header: `"7"`, want: 7},
		{header: `W/"7"`, want: 7},
		{header: " \"12\" ", want: 12},
		{header: "7", want: 7},
		{header: `"0"`, stale: true},
		{header: `"-3"`, stale: true},
		{header: `"abc"`, stale: true},
		{header: `"7", "8"`, stale: true},
	} {
		t.Run(c.header, func(t *testing.T) {
			headers := map[string]string{}
			if c.header != "" {
				headers["If-Match"] = c.header
			}
			got, err := run(t, "", "", headers, api.IfMatch)
			var p *problem.Problem
			if c.stale {
				if !errors.As(err, &p) || p.Status != 412 {
					t.Fatalf("IfMatch(%q) = %d, %v; want a 412", c.header, got, err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("IfMatch(%q) = %d, %v; want %d", c.header, got, err, c.want)
			}
		})
	}
}
