package pve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// maxBodyBytes bounds a JSON or form body (uploads are multipart and bounded separately).
const maxBodyBytes = 4 << 20

// params are a call's parameters, as strings the way PVE sees them: query string and body
// merged, JSON booleans as 1/0 and JSON numbers as their digits. The typed getters record
// problems instead of failing at once, so that one 400 lists every bad parameter, as PVE's
// schema validator does.
type params struct {
	values map[string]string
	errs   map[string]string
}

// readParams collects the query string and, for POST and PUT, a JSON or form-encoded body.
// go-proxmox sends JSON; curl and the Terraform providers send forms.
func readParams(r *http.Request) (*params, error) {
	p := &params{values: map[string]string{}, errs: map[string]string{}}
	for k, vs := range r.URL.Query() {
		p.values[k] = vs[len(vs)-1]
	}
	if r.Method != http.MethodPost && r.Method != http.MethodPut {
		return p, nil
	}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct == "multipart/form-data" {
		return p, nil // the upload handler reads the stream itself
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBodyBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read body: %w", err)
	}
	if len(body) > maxBodyBytes {
		return nil, &apiError{status: http.StatusRequestEntityTooLarge, message: "request too large\n"}
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return p, nil
	}
	if ct == "application/json" {
		return p, p.addJSON(body)
	}
	return p, p.addForm(string(body))
}

// addForm parses a form body. It splits at '&' only, so that an unencoded ';' (tags=a;b
// from a hand-written curl call) stays part of its value.
func (p *params) addForm(body string) error {
	for _, pair := range strings.Split(body, "&") {
		if pair == "" {
			continue
		}
		k, v, _ := strings.Cut(pair, "=")
		key, err1 := url.QueryUnescape(k)
		val, err2 := url.QueryUnescape(v)
		if err1 != nil || err2 != nil {
			return &apiError{status: http.StatusBadRequest, message: "unable to parse form data\n"}
		}
		p.values[key] = val
	}
	return nil
}

func (p *params) addJSON(body []byte) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		return &apiError{status: http.StatusBadRequest, message: "unable to parse JSON body - " + err.Error() + "\n"}
	}
	for k, v := range obj {
		switch v := v.(type) {
		case nil:
			// A JSON null carries no value; PVE treats the parameter as absent.
		case string:
			p.values[k] = v
		case json.Number:
			p.values[k] = v.String()
		case bool:
			p.values[k] = boolString(v)
		case []any:
			parts := make([]string, 0, len(v))
			for _, e := range v {
				parts = append(parts, fmt.Sprint(e))
			}
			p.values[k] = strings.Join(parts, ",")
		default:
			p.errs[k] = fmt.Sprintf("type check ('string') failed - got a %T", v)
		}
	}
	return nil
}

func boolString(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// has reports whether the parameter was sent.
func (p *params) has(name string) bool {
	_, ok := p.values[name]
	return ok
}

// str returns the parameter, or "" when it was not sent.
func (p *params) str(name string) string { return p.values[name] }

// required returns the parameter and records PVE's message when it is missing.
func (p *params) required(name string) string {
	v, ok := p.values[name]
	if !ok || v == "" {
		p.errs[name] = msgMissing
	}
	return v
}

// int returns an integer parameter, def when absent, recording type and minimum problems.
func (p *params) int(name string, def, minimum int) int {
	v, ok := p.values[name]
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		p.errs[name] = fmt.Sprintf("type check ('integer') failed - got '%s'", v)
		return def
	}
	if n < minimum {
		p.errs[name] = fmt.Sprintf("value must have a minimum value of %d", minimum)
	}
	return n
}

// bool returns a boolean parameter (1/0, true/false, yes/no, on/off, as PVE accepts), def
// when absent.
func (p *params) bool(name string, def bool) bool {
	v, ok := p.values[name]
	if !ok {
		return def
	}
	b, ok := parseBool(v)
	if !ok {
		p.errs[name] = fmt.Sprintf("type check ('boolean') failed - got '%s'", v)
	}
	return b
}

func parseBool(v string) (value, ok bool) {
	switch strings.ToLower(v) {
	case "1", "true", "yes", "on":
		return true, true
	case "0", "false", "no", "off":
		return false, true
	}
	return false, false
}

// enum returns a parameter that must be one of allowed ("" when absent).
func (p *params) enum(name string, allowed ...string) string {
	v, ok := p.values[name]
	if ok && !slices.Contains(allowed, v) {
		p.errs[name] = enumMessage(v, allowed)
	}
	return v
}

func enumMessage(v string, allowed []string) string {
	return fmt.Sprintf("value '%s' does not have a value in the enumeration '%s'", v, strings.Join(allowed, ", "))
}

// pattern records a problem when a sent parameter does not match re.
func (p *params) pattern(name string, re *regexp.Regexp) string {
	v, ok := p.values[name]
	if ok && !re.MatchString(v) {
		p.errs[name] = "value does not match the regex pattern"
	}
	return v
}

// fail records a problem with one parameter.
func (p *params) fail(name, format string, args ...any) {
	p.errs[name] = fmt.Sprintf(format, args...)
}

// err returns PVE's 400 listing every recorded problem, or nil.
func (p *params) err() error {
	if len(p.errs) == 0 {
		return nil
	}
	return paramErrors(p.errs)
}

// checkAllowed records every sent parameter that the route does not declare.
func (p *params) checkAllowed(allowed []string, pathVars map[string]string) {
	for k := range p.values {
		if _, ok := pathVars[k]; ok {
			continue
		}
		if !paramDeclared(allowed, k) {
			p.errs[k] = msgNotDefined
		}
	}
}

// paramDeclared reports whether name is one of the declared names, where a declared
// "scsi[n]" covers scsi0 up to the index limit indexedMax gives.
func paramDeclared(declared []string, name string) bool {
	if slices.Contains(declared, name) {
		return true
	}
	prefix, idx, ok := splitIndexed(name)
	if !ok {
		return false
	}
	return slices.Contains(declared, prefix+"[n]") && idx <= indexedMax[prefix]
}

var indexedKeyRE = regexp.MustCompile(`^([a-z]+)(0|[1-9][0-9]*)$`)

// splitIndexed splits "scsi12" into "scsi" and 12.
func splitIndexed(name string) (prefix string, idx int, ok bool) {
	m := indexedKeyRE.FindStringSubmatch(name)
	if m == nil {
		return "", 0, false
	}
	idx, err := strconv.Atoi(m[2])
	return m[1], idx, err == nil
}
