package pve

import (
	"bufio"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
)

// apiPrefix is where PVE serves its JSON API.
const apiPrefix = "/api2/json"

// route is one endpoint of the PVE API subset. Its method and pattern are PVE's (the
// fidelity test checks both against the official schema, and every name in params too).
type route struct {
	method string
	// pattern is the PVE path template, e.g. "/nodes/{node}/qemu/{vmid}/config". A last
	// segment "{name...}" takes the rest of the path: volume IDs contain slashes and clients
	// send them unescaped.
	pattern string
	// params are the parameters accepted besides the path's, named as the schema names them
	// ("scsi[n]" covers scsi0..scsi30). Anything else is refused with PVE's 400.
	params []string
	// raw routes read the request body themselves (multipart uploads).
	raw    bool
	handle func(*call) (any, error)
}

// key is how fault knobs name a route: "POST /nodes/{node}/qemu".
func (rt *route) key() string { return rt.method + " " + rt.pattern }

// call is one API request being handled.
type call struct {
	c    *Cluster
	r    *http.Request
	vars map[string]string // path variables
	p    *params
	user string // the token's full ID, e.g. "horizon@pve!ci", as UPIDs name it
}

// match reports whether path (without the API prefix) fits pattern, and its variables.
func match(pattern, path string) (map[string]string, bool) {
	ps := strings.Split(strings.Trim(pattern, "/"), "/")
	xs := strings.Split(strings.Trim(path, "/"), "/")
	vars := map[string]string{}
	for i, seg := range ps {
		if i >= len(xs) {
			return nil, false
		}
		if name, ok := strings.CutPrefix(seg, "{"); ok {
			name = strings.TrimSuffix(name, "}")
			if rest, greedy := strings.CutSuffix(name, "..."); greedy {
				vars[rest] = strings.Join(xs[i:], "/")
				return vars, xs[i] != ""
			}
			if xs[i] == "" {
				return nil, false
			}
			vars[name] = xs[i]
			continue
		}
		if seg != xs[i] {
			return nil, false
		}
	}
	return vars, len(ps) == len(xs)
}

// ServeHTTP serves the PVE API under /api2/json and the admin endpoints under /sandbox/.
func (c *Cluster) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case strings.HasPrefix(r.URL.Path, apiPrefix+"/"):
		c.serveAPI(w, r)
	case strings.HasPrefix(r.URL.Path, adminPrefix):
		c.sb.serveAdmin(w, r, c)
	default:
		http.NotFound(w, r)
	}
}

func (c *Cluster) serveAPI(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimPrefix(r.URL.Path, apiPrefix)
	user, err := c.authenticate(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	var (
		rt   *route
		vars map[string]string
	)
	for i := range c.routes {
		if v, ok := match(c.routes[i].pattern, path); ok && c.routes[i].method == r.Method {
			rt, vars = &c.routes[i], v
			break
		}
	}
	if rt == nil {
		// pveproxy answers an unknown path and an unknown method on a known path alike.
		writeError(w, r, &apiError{status: http.StatusNotImplemented, message: fmt.Sprintf("Method '%s %s' not implemented", r.Method, path)})
		return
	}
	if err := c.sb.knobs.before(r.Context(), rt.key()); err != nil {
		writeError(w, r, err)
		return
	}
	data, err := c.dispatch(rt, r, vars, user)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeData(w, data)
}

func (c *Cluster) dispatch(rt *route, r *http.Request, vars map[string]string, user string) (any, error) {
	p, err := readParams(r)
	if err != nil {
		return nil, err
	}
	if !rt.raw {
		p.checkAllowed(rt.params, vars)
		if err := p.err(); err != nil {
			return nil, err
		}
	}
	if name, ok := vars["node"]; ok {
		if err := c.checkNode(name); err != nil {
			return nil, err
		}
	}
	k := &call{c: c, r: r, vars: vars, p: p, user: user}
	if err := k.checkExpr(routeChecks[rt.key()].Check); err != nil {
		return nil, err
	}
	return rt.handle(k)
}

// authenticate checks "Authorization: PVEAPIToken=USER@REALM!TOKENID=SECRET" and returns
// the token ID. PVE answers 401 without a body; its 3 s delay for failed logins is skipped.
func (c *Cluster) authenticate(r *http.Request) (string, error) {
	h := r.Header.Get("Authorization")
	value, ok := strings.CutPrefix(h, "PVEAPIToken=")
	if !ok {
		return "", unauthorized("No ticket")
	}
	id, secret, ok := strings.Cut(value, "=")
	if !ok {
		return "", unauthorized("invalid token value!")
	}
	for i := range c.cfg.Tokens {
		// Only ID and Secret are read here, without c.mu: SetTokenACLs changes the other fields.
		t := &c.cfg.Tokens[i]
		if t.ID == id {
			if subtle.ConstantTimeCompare([]byte(t.Secret), []byte(secret)) == 1 {
				return id, nil
			}
			return "", unauthorized("invalid token value!")
		}
	}
	user, name, _ := strings.Cut(id, "!")
	return "", unauthorized(fmt.Sprintf("no such token '%s' for user '%s'", name, user))
}

// writeData writes PVE's success envelope.
func writeData(w http.ResponseWriter, data any) {
	body, err := json.Marshal(map[string]any{"data": data})
	if err != nil {
		// Only our own types are marshalled; failing here is a programming error.
		panic(fmt.Sprintf("marshal response: %v", err))
	}
	w.Header().Set("Content-Type", "application/json;charset=UTF-8")
	_, _ = w.Write(body) // the client went away: nothing to do
}

// writeError answers with PVE's error shape. PVE puts the message in the status line's
// reason phrase, which net/http cannot do, so the response is written on the hijacked
// connection (the listener speaks HTTP/1.1 only, as pveproxy does) and the connection is
// closed afterwards.
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	var ae *apiError
	if !errors.As(err, &ae) {
		ae = failf("%s", err.Error())
	}
	var body []byte
	if !ae.noBody {
		env := map[string]any{"data": nil, "message": ae.message}
		if len(ae.errors) > 0 {
			env["errors"] = ae.errors
		}
		body, _ = json.Marshal(env) // strings and maps of strings always marshal
	}
	// Drain what the client is still sending so it reads our answer instead of a reset.
	_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 64<<20))

	hj, ok := w.(http.Hijacker)
	if !ok {
		w.Header().Set("Content-Type", "application/json;charset=UTF-8")
		w.WriteHeader(ae.status)
		_, _ = w.Write(body)
		return
	}
	conn, buf, hjErr := hj.Hijack()
	if hjErr != nil {
		slog.Debug("sandbox: hijack failed", "error", hjErr)
		return
	}
	defer conn.Close() // the response is complete; the connection is not reused
	writeRawResponse(buf.Writer, ae.status, ae.reason(), body)
	_ = buf.Flush() // the client went away: nothing to do
}

func writeRawResponse(w *bufio.Writer, status int, reason string, body []byte) {
	reason = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, reason)
	fmt.Fprintf(w, "HTTP/1.1 %d %s\r\n", status, reason)
	if body != nil {
		fmt.Fprintf(w, "Content-Type: application/json;charset=UTF-8\r\n")
	}
	fmt.Fprintf(w, "Content-Length: %d\r\nConnection: close\r\n\r\n", len(body))
	_, _ = w.Write(body)
}
