package pve

import (
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// adminPrefix is where each cluster listener serves the fault knobs, outside PVE's API.
const adminPrefix = "/sandbox/"

// adminRequest is the JSON body the admin endpoints take; each uses the fields it needs.
type adminRequest struct {
	Route   string `json:"route"`   // "METHOD /pattern"
	Latency string `json:"latency"` // a Go duration, "50ms"
	Count   int    `json:"count"`
	Status  int    `json:"status"`
	Message string `json:"message"`
	Type    string `json:"type"` // task type
}

// serveAdmin serves the admin endpoints (see README.md). They need the admin token as
// "Authorization: Bearer <token>"; with no token configured they do not exist.
func (sb *Sandbox) serveAdmin(w http.ResponseWriter, r *http.Request, c *Cluster) {
	token := sb.cfg.AdminToken
	got, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if token == "" {
		http.NotFound(w, r)
		return
	}
	if subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
		adminJSON(w, http.StatusUnauthorized, map[string]string{"error": "admin token required"})
		return
	}
	var req adminRequest
	if r.Method == http.MethodPost && r.ContentLength != 0 {
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			adminJSON(w, http.StatusBadRequest, map[string]string{"error": "bad JSON body: " + err.Error()})
			return
		}
	}
	res, status, err := sb.admin(r.Method, strings.TrimPrefix(r.URL.Path, adminPrefix), req, c)
	if err != nil {
		adminJSON(w, status, map[string]string{"error": err.Error()})
		return
	}
	adminJSON(w, http.StatusOK, res)
}

func (sb *Sandbox) admin(method, path string, req adminRequest, c *Cluster) (any, int, error) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if method == http.MethodGet && path == "state" {
		return sb.State(), 0, nil
	}
	if method == http.MethodGet && path == "inventory" {
		return map[string]any{"vms": c.VMs(), "tasks": c.Tasks()}, 0, nil
	}
	if method != http.MethodPost {
		return nil, http.StatusMethodNotAllowed, fmt.Errorf("use POST")
	}
	switch {
	case path == "latency":
		d, err := time.ParseDuration(req.Latency)
		if err != nil {
			return nil, http.StatusBadRequest, fmt.Errorf("latency: %w", err)
		}
		sb.knobs.setLatency(req.Route, d)
		return map[string]string{"route": req.Route, "latency": d.String()}, 0, nil
	case path == "fail-next":
		if req.Route == "" || req.Status < 400 {
			return nil, http.StatusBadRequest, fmt.Errorf("want route and a status >= 400")
		}
		sb.FailNext(req.Route, max(req.Count, 1), req.Status, req.Message)
		return req, 0, nil
	case path == "hang-tasks" && req.Type != "":
		sb.HangTasks(req.Type)
		return map[string]string{"hung": req.Type}, 0, nil
	case path == "release-tasks" && req.Type != "":
		sb.ReleaseTasks(req.Type)
		return map[string]string{"released": req.Type}, 0, nil
	case path == "fail-downloads":
		sb.FailDownloads(req.Count)
		return map[string]int{"count": req.Count}, 0, nil
	case path == "rotate-cert":
		fp, err := c.RotateCert()
		if err != nil {
			return nil, http.StatusInternalServerError, err
		}
		return map[string]string{"fingerprint": fp}, 0, nil
	case len(parts) == 3 && parts[0] == "nodes":
		return sb.adminNode(c, parts[1], parts[2])
	}
	return nil, http.StatusNotFound, fmt.Errorf("no admin endpoint %s %s", method, path)
}

func (sb *Sandbox) adminNode(c *Cluster, node, action string) (any, int, error) {
	if c.Node(node) == nil {
		return nil, http.StatusNotFound, fmt.Errorf("no node %q", node)
	}
	switch action {
	case "offline", "online":
		if err := c.SetNodeOnline(node, action == "online"); err != nil {
			return nil, http.StatusInternalServerError, err
		}
		return map[string]any{"node": node, "online": action == "online"}, 0, nil
	case "rotate-host-key":
		fp, err := c.RotateHostKey(node)
		if err != nil {
			return nil, http.StatusInternalServerError, err
		}
		return map[string]string{"node": node, "host_key_fingerprint": fp}, 0, nil
	}
	return nil, http.StatusNotFound, fmt.Errorf("no node action %q", action)
}

func adminJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the client went away: nothing to do
}
