package nagios

import (
	"context"
	"crypto/md5"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

var (
	// ErrUnauthorized: the CGIs refused the username and password.
	ErrUnauthorized = errors.New("nagios refused the username or password")
	// ErrUnavailable: the CGIs could not be reached or failed (transport error, 5xx).
	ErrUnavailable = errors.New("nagios is unavailable")
	// ErrUnreachable: nothing answered at the URL (no connection, or no answer in time): a
	// server down rather than one that answers wrongly. Such an error is ErrUnavailable too.
	ErrUnreachable = errors.New("nagios does not answer")
)

// Client reads a Nagios server through its CGIs. The zero HTTP uses a client with a 15 s timeout.
type Client struct {
	// URL is the CGI base, e.g. https://nagios.example.org/cgi-bin/nagios4.
	URL      string
	Username string
	Password string
	HTTP     *http.Client
}

var defaultHTTP = &http.Client{Timeout: 15 * time.Second}

// Commands returns the names of the commands the server defines, sorted.
func (c *Client) Commands(ctx context.Context) ([]string, error) {
	var d struct {
		List []string `json:"commandlist"`
	}
	if _, err := c.object(ctx, url.Values{"query": {"commandlist"}}, &d); err != nil {
		return nil, err
	}
	slices.Sort(d.List)
	return d.List, nil
}

// Hostgroups returns the host groups that have members, sorted (Nagios's hostgrouplist leaves out
// empty ones: use HostgroupExists to check a name).
func (c *Client) Hostgroups(ctx context.Context) ([]string, error) {
	var d struct {
		List []string `json:"hostgrouplist"`
	}
	if _, err := c.object(ctx, url.Values{"query": {"hostgrouplist"}}, &d); err != nil {
		return nil, err
	}
	slices.Sort(d.List)
	return d.List, nil
}

// HostgroupExists reports whether the server defines the host group name, members or not.
func (c *Client) HostgroupExists(ctx context.Context, name string) (bool, error) {
	var d struct {
		Hostgroup *struct {
			Name string `json:"group_name"`
		} `json:"hostgroup"`
	}
	ok, err := c.object(ctx, url.Values{"query": {"hostgroup"}, "hostgroup": {name}}, &d)
	if err != nil {
		return false, err
	}
	return ok && d.Hostgroup != nil && d.Hostgroup.Name == name, nil
}

// Hosts returns the names of the hosts the server monitors, sorted.
func (c *Client) Hosts(ctx context.Context) ([]string, error) {
	var d struct {
		List []string `json:"hostlist"`
	}
	if _, err := c.object(ctx, url.Values{"query": {"hostlist"}}, &d); err != nil {
		return nil, err
	}
	slices.Sort(d.List)
	return d.List, nil
}

// Services returns, per host, the descriptions of its services.
func (c *Client) Services(ctx context.Context) (map[string][]string, error) {
	var d struct {
		List map[string][]string `json:"servicelist"`
	}
	if _, err := c.object(ctx, url.Values{"query": {"servicelist"}}, &d); err != nil {
		return nil, err
	}
	return d.List, nil
}

// object runs one objectjson.cgi query and decodes its data into out. It reports false, with no
// error, when Nagios answers that the object does not exist.
func (c *Client) object(ctx context.Context, q url.Values, out any) (bool, error) {
	body, err := c.get(ctx, "objectjson.cgi", q)
	if err != nil {
		return false, err
	}
	var r struct {
		Result struct {
			TypeCode int    `json:"type_code"`
			TypeText string `json:"type_text"`
			Message  string `json:"message"`
		} `json:"result"`
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return false, fmt.Errorf("%w: objectjson.cgi did not answer JSON: %.200q (is the URL the CGI base, e.g. …/cgi-bin/nagios4?)", ErrUnavailable, body)
	}
	if r.Result.TypeCode != 0 {
		if strings.Contains(strings.ToLower(r.Result.Message), "not authorized") {
			return false, fmt.Errorf("%w: %s", ErrUnauthorized, r.Result.Message)
		}
		return false, nil // e.g. "The hostgroup 'x' could not be found."
	}
	if err := json.Unmarshal(r.Data, out); err != nil {
		return false, fmt.Errorf("%w: objectjson.cgi data: %v", ErrUnavailable, err)
	}
	return true, nil
}

// get fetches cgi?q, answering the server's authentication challenge (Basic or Digest).
func (c *Client) get(ctx context.Context, cgi string, q url.Values) ([]byte, error) {
	u := strings.TrimSuffix(c.URL, "/") + "/" + cgi + "?" + q.Encode()
	hc := c.HTTP
	if hc == nil {
		hc = defaultHTTP
	}
	do := func(auth string) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := hc.Do(req)
		if err != nil {
			// The URL is the CGI base without credentials (checked at registration); the query
			// holds only object names.
			if unreachable(err) {
				return nil, fmt.Errorf("%w: %w: %v", ErrUnavailable, ErrUnreachable, err)
			}
			return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
		return resp, nil
	}
	resp, err := do("")
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusUnauthorized {
		challenge := resp.Header.Get("WWW-Authenticate")
		drain(resp)
		auth, err := c.authorization(challenge, resp.Request.URL.RequestURI())
		if err != nil {
			return nil, err
		}
		if resp, err = do(auth); err != nil {
			return nil, err
		}
	}
	defer drain(resp)
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return nil, ErrUnauthorized
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("%w: %s answered %s", ErrUnavailable, cgi, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("%w: reading %s: %v", ErrUnavailable, cgi, err)
	}
	return body, nil
}

func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	_ = resp.Body.Close()
}

// authorization answers a WWW-Authenticate challenge for uri.
func (c *Client) authorization(challenge, uri string) (string, error) {
	scheme, params, _ := strings.Cut(strings.TrimSpace(challenge), " ")
	switch strings.ToLower(scheme) {
	case "basic":
		req, _ := http.NewRequest(http.MethodGet, "/", nil)
		req.SetBasicAuth(c.Username, c.Password)
		return req.Header.Get("Authorization"), nil
	case "digest":
		return c.digest(parseChallenge(params), uri)
	}
	return "", fmt.Errorf("%w: the server asks for authentication scheme %q (Basic or Digest supported)", ErrUnavailable, scheme)
}

// digest computes an RFC 7616 (MD5, qop auth or none) Authorization header.
func (c *Client) digest(ch map[string]string, uri string) (string, error) {
	if a := ch["algorithm"]; a != "" && !strings.EqualFold(a, "MD5") {
		return "", fmt.Errorf("%w: Digest algorithm %q is not supported (MD5 is)", ErrUnavailable, a)
	}
	h := func(s string) string { sum := md5.Sum([]byte(s)); return hex.EncodeToString(sum[:]) }
	ha1 := h(c.Username + ":" + ch["realm"] + ":" + c.Password)
	ha2 := h(http.MethodGet + ":" + uri)
	header := fmt.Sprintf(`Digest username=%q, realm=%q, nonce=%q, uri=%q`, c.Username, ch["realm"], ch["nonce"], uri)
	if qops := strings.Split(ch["qop"], ","); slices.ContainsFunc(qops, func(q string) bool { return strings.TrimSpace(q) == "auth" }) {
		b := make([]byte, 8)
		_, _ = rand.Read(b)
		cnonce, nc := hex.EncodeToString(b), "00000001"
		resp := h(ha1 + ":" + ch["nonce"] + ":" + nc + ":" + cnonce + ":auth:" + ha2)
		header += fmt.Sprintf(`, qop=auth, nc=%s, cnonce=%q, response=%q`, nc, cnonce, resp)
	} else {
		header += fmt.Sprintf(`, response=%q`, h(ha1+":"+ch["nonce"]+":"+ha2))
	}
	if o, ok := ch["opaque"]; ok {
		header += fmt.Sprintf(`, opaque=%q`, o)
	}
	if a := ch["algorithm"]; a != "" {
		header += ", algorithm=" + a
	}
	return header, nil
}

// parseChallenge splits `realm="x", nonce="y", qop="auth,auth-int"` into its parameters.
func parseChallenge(s string) map[string]string {
	out := map[string]string{}
	for s = strings.TrimSpace(s); s != ""; s = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(s), ",")) {
		k, rest, ok := strings.Cut(s, "=")
		if !ok {
			break
		}
		k = strings.ToLower(strings.TrimSpace(k))
		if strings.HasPrefix(rest, `"`) {
			end := strings.Index(rest[1:], `"`)
			if end < 0 {
				out[k], s = rest[1:], ""
				continue
			}
			out[k], s = rest[1:1+end], rest[2+end:]
			continue
		}
		v, after, _ := strings.Cut(rest, ",")
		out[k], s = strings.TrimSpace(v), after
	}
	return out
}

// unreachable says whether a request's error means that nothing answered: the connection was
// not made, or no answer came in time. A TLS failure or a malformed answer is not that.
func unreachable(err error) bool {
	var op *net.OpError
	var ne net.Error
	return errors.As(err, &op) && op.Op == "dial" || errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}
