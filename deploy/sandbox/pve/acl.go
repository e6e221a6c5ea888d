package pve

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
)

// Privileges, as PVE checks them for API tokens.
//
// A token's privileges on a path come from ACL entries (path, role, propagate) and roles (sets
// of privileges; PVE's built-in ones and the cluster's own). The deepest path at or above the
// checked one that has entries decides (an entry above counts only if it propagates); a VM or
// storage that is a member of a pool also gets what the token has on /pool/<pool>. With
// privilege separation (privsep) a token holds the intersection of its own ACLs and its user's;
// without, exactly its user's. A token with no ACLs of either kind and no privsep holds every
// privilege (root@pam's token without separation): the default sandbox keeps such a token.
//
// Every served route enforces the check the official schema states for it (routePermissions,
// compared with the schema by schema_test.go); routes whose schema says "user: all" make the
// checks its description names in their handlers (listings filter what the token may not
// audit). Failures answer as PVE does: 403 "Permission check failed (/vms/101, VM.Allocate)".

// ACLConfig is one ACL entry.
type ACLConfig struct {
	// Path is the ACL path, e.g. "/", "/vms", "/pool/dev", "/storage/local".
	Path string `yaml:"path"`
	// Role is a built-in role (PVEVMAdmin, PVEDatastoreUser, …) or one of the cluster's Roles.
	Role string `yaml:"role"`
	// NoPropagate keeps the entry to Path itself (PVE's propagate=0).
	NoPropagate bool `yaml:"no_propagate"`
}

// builtinRoles are PVE 8's built-in roles that concern the paths the sandbox serves.
var builtinRoles = map[string][]string{
	"NoAccess":          {},
	"PVEAuditor":        {"Datastore.Audit", "Pool.Audit", "SDN.Audit", "Sys.Audit", "VM.Audit"},
	"PVEVMAdmin":        {"VM.Allocate", "VM.Audit", "VM.Backup", "VM.Clone", "VM.Config.CDROM", "VM.Config.CPU", "VM.Config.Cloudinit", "VM.Config.Disk", "VM.Config.HWType", "VM.Config.Memory", "VM.Config.Network", "VM.Config.Options", "VM.Console", "VM.Migrate", "VM.PowerMgmt", "VM.Snapshot", "VM.Snapshot.Rollback"},
	"PVEVMUser":         {"VM.Audit", "VM.Backup", "VM.Config.CDROM", "VM.Config.Cloudinit", "VM.Console", "VM.PowerMgmt"},
	"PVETemplateUser":   {"VM.Audit", "VM.Clone"},
	"PVEDatastoreAdmin": {"Datastore.Allocate", "Datastore.AllocateSpace", "Datastore.AllocateTemplate", "Datastore.Audit"},
	"PVEDatastoreUser":  {"Datastore.AllocateSpace", "Datastore.Audit"},
	"PVEPoolAdmin":      {"Pool.Allocate", "Pool.Audit"},
	"PVEPoolUser":       {"Pool.Audit"},
	"PVESDNUser":        {"SDN.Audit", "SDN.Use"},
	"PVESysAdmin":       {"Sys.AccessNetwork", "Sys.Audit", "Sys.Console", "Sys.Syslog"},
}

// allPrivileges are every privilege builtinRoles name plus the system ones: Administrator's.
var allPrivileges = func() []string {
	set := map[string]bool{"Sys.Modify": true, "Sys.PowerMgmt": true, "Permissions.Modify": true}
	for _, privs := range builtinRoles {
		for _, p := range privs {
			set[p] = true
		}
	}
	return sortedKeys(set)
}()

func init() { builtinRoles["Administrator"] = allPrivileges }

// privSet is a set of privileges; nil means every privilege.
type privSet map[string]bool

func (s privSet) has(priv string) bool { return s == nil || s[priv] }

// unrestricted reports whether the token holds every privilege everywhere.
func (t TokenConfig) unrestricted() bool {
	return !t.Privsep && len(t.ACLs) == 0 && len(t.UserACLs) == 0
}

// privileges returns what token holds on p. The caller holds c.mu (pool membership).
func (c *Cluster) privileges(token, p string) privSet {
	t, ok := c.token(token)
	if !ok {
		return privSet{}
	}
	if t.unrestricted() {
		return nil
	}
	user := privSet(nil) // a user without ACLs in the config is unrestricted (root@pam)
	if len(t.UserACLs) > 0 {
		user = c.aclPrivileges(t.UserACLs, p)
	}
	if !t.Privsep {
		return user
	}
	own := c.aclPrivileges(t.ACLs, p)
	if user == nil {
		return own
	}
	both := privSet{}
	for priv := range own {
		if user[priv] {
			both[priv] = true
		}
	}
	return both
}

func (c *Cluster) token(id string) (TokenConfig, bool) {
	for _, t := range c.cfg.Tokens {
		if t.ID == id {
			return t, true
		}
	}
	return TokenConfig{}, false
}

// aclPrivileges resolves acls on p, adding the pool's for a member VM or storage.
func (c *Cluster) aclPrivileges(acls []ACLConfig, p string) privSet {
	roles := rolesAt(acls, p)
	if pool := c.poolOfPath(p); pool != "" {
		roles = append(roles, rolesAt(acls, "/pool/"+pool)...)
	}
	set := privSet{}
	for _, role := range roles {
		privs, ok := builtinRoles[role]
		if !ok {
			privs = c.cfg.Roles[role]
		}
		for _, priv := range privs {
			set[priv] = true
		}
	}
	return set
}

// rolesAt returns the roles of the deepest entries at or above p that reach it.
func rolesAt(acls []ACLConfig, p string) []string {
	p = path.Clean("/" + p)
	best, roles := -1, []string(nil)
	for _, a := range acls {
		ap := path.Clean("/" + a.Path)
		reaches := ap == p || (!a.NoPropagate && (ap == "/" || strings.HasPrefix(p, ap+"/")))
		if !reaches {
			continue
		}
		depth := strings.Count(strings.TrimSuffix(ap, "/"), "/")
		switch {
		case depth > best:
			best, roles = depth, []string{a.Role}
		case depth == best:
			roles = append(roles, a.Role)
		}
	}
	return roles
}

// poolOfPath returns the pool a /vms/<id> or /storage/<id> path's object belongs to, or "".
// The caller holds c.mu.
func (c *Cluster) poolOfPath(p string) string {
	if id, ok := strings.CutPrefix(p, "/vms/"); ok {
		if vmid, err := strconv.Atoi(id); err == nil {
			return c.poolOf(vmid)
		}
	}
	if id, ok := strings.CutPrefix(p, "/storage/"); ok {
		for _, pool := range sortedKeys(c.pools) {
			if slices.Contains(c.pools[pool].Storages, id) {
				return pool
			}
		}
	}
	return ""
}

// permissionDenied is PVE's answer to a failed check.
func permissionDenied(p string, privs ...string) error {
	return &apiError{status: http.StatusForbidden, message: fmt.Sprintf("Permission check failed (%s, %s)", p, strings.Join(privs, "|"))}
}

// require fails unless the caller holds one of privs on p (all of them when all is set).
func (k *call) require(p string, all bool, privs ...string) error {
	k.c.mu.Lock()
	held := k.c.privileges(k.user, p)
	k.c.mu.Unlock()
	n := 0
	for _, priv := range privs {
		if held.has(priv) {
			n++
		}
	}
	if (all && n == len(privs)) || (!all && n > 0) {
		return nil
	}
	return permissionDenied(p, privs...)
}

// may reports whether the caller holds one of privs on p. The caller holds c.mu.
func (k *call) may(p string, privs ...string) bool {
	held := k.c.privileges(k.user, p)
	return slices.ContainsFunc(privs, held.has)
}

// checkExpr evaluates a schema permission check: ["perm", path, [privs], ("any", 1 |
// "require_param", name)…], ["and", …], ["or", …]. It returns the first failure.
func (k *call) checkExpr(expr []any) error {
	if len(expr) == 0 {
		return nil
	}
	switch expr[0] {
	case "and":
		for _, sub := range expr[1:] {
			if err := k.checkExpr(sub.([]any)); err != nil {
				return err
			}
		}
		return nil
	case "or":
		var first error
		for _, sub := range expr[1:] {
			err := k.checkExpr(sub.([]any))
			if err == nil {
				return nil
			}
			if first == nil {
				first = err
			}
		}
		return first
	case "perm":
		p := k.substitute(expr[1].(string))
		var privs []string
		for _, x := range expr[2].([]any) {
			privs = append(privs, x.(string))
		}
		all := true
		for i := 3; i+1 < len(expr); i += 2 {
			switch expr[i] {
			case "any":
				all = false
			case "require_param":
				if name := expr[i+1].(string); !k.p.has(name) {
					return permissionDenied(p, privs...)
				}
			}
		}
		return k.require(p, all, privs...)
	}
	panic(fmt.Sprintf("sandbox: permission check %v not understood", expr[0]))
}

// substitute fills a check path's {name} from the path variables and parameters.
func (k *call) substitute(p string) string {
	for {
		i := strings.Index(p, "{")
		j := strings.Index(p, "}")
		if i < 0 || j < i {
			return p
		}
		name := p[i+1 : j]
		v, ok := k.vars[name]
		if !ok {
			v = k.p.str(name)
		}
		p = p[:i] + v + p[j+1:]
	}
}

// routePermissions are the permissions objects of the official schema for the served routes
// (schema_test.go checks that they are the schema's, word for word). A "check" is enforced
// before the handler runs; "user": "all" routes check in their handlers what the description
// says.
var routePermissions = map[string]string{
	"GET /version":                                                `{"user": "all"}`,
	"GET /nodes":                                                  `{"user": "all"}`,
	"GET /nodes/{node}/status":                                    `{"check": ["perm", "/nodes/{node}", ["Sys.Audit"]]}`,
	"GET /cluster/status":                                         `{"check": ["perm", "/", ["Sys.Audit"]]}`,
	"GET /cluster/resources":                                      `{"user": "all"}`,
	"GET /cluster/nextid":                                         `{"user": "all"}`,
	"GET /pools":                                                  `{"description": "List all pools where you have Pool.Audit permissions on /pool/<pool>, or the pool specific with {poolid}", "user": "all"}`,
	"POST /pools":                                                 `{"check": ["perm", "/pool/{poolid}", ["Pool.Allocate"]]}`,
	"PUT /pools":                                                  `{"check": ["perm", "/pool/{poolid}", ["Pool.Allocate"]], "description": "You also need the right to modify permissions on any object you add/delete."}`,
	"DELETE /pools":                                               `{"check": ["perm", "/pool/{poolid}", ["Pool.Allocate"]], "description": "You can only delete empty pools (no members)."}`,
	"GET /nodes/{node}/qemu":                                      `{"description": "Only list VMs where you have VM.Audit permissions on /vms/<vmid>.", "user": "all"}`,
	"POST /nodes/{node}/qemu":                                     `{"description": "You need 'VM.Allocate' permissions on /vms/{vmid} or on the VM pool /pool/{pool}. For restore (option 'archive'), it is enough if the user has 'VM.Backup' permission and the VM already exists. If you create disks you need 'Datastore.AllocateSpace' on any used storage.If you use a bridge/vlan, you need 'SDN.Use' on any used bridge/vlan.", "user": "all"}`,
	"GET /nodes/{node}/qemu/{vmid}/config":                        `{"check": ["perm", "/vms/{vmid}", ["VM.Audit"]]}`,
	"POST /nodes/{node}/qemu/{vmid}/config":                       `{"check": ["perm", "/vms/{vmid}", ["VM.Config.Disk", "VM.Config.CDROM", "VM.Config.CPU", "VM.Config.Memory", "VM.Config.Network", "VM.Config.HWType", "VM.Config.Options", "VM.Config.Cloudinit"], "any", 1]}`,
	"PUT /nodes/{node}/qemu/{vmid}/config":                        `{"check": ["perm", "/vms/{vmid}", ["VM.Config.Disk", "VM.Config.CDROM", "VM.Config.CPU", "VM.Config.Memory", "VM.Config.Network", "VM.Config.HWType", "VM.Config.Options", "VM.Config.Cloudinit"], "any", 1]}`,
	"DELETE /nodes/{node}/qemu/{vmid}":                            `{"check": ["perm", "/vms/{vmid}", ["VM.Allocate"]]}`,
	"GET /nodes/{node}/qemu/{vmid}/status/current":                `{"check": ["perm", "/vms/{vmid}", ["VM.Audit"]]}`,
	"POST /nodes/{node}/qemu/{vmid}/status/start":                 `{"check": ["perm", "/vms/{vmid}", ["VM.PowerMgmt"]]}`,
	"POST /nodes/{node}/qemu/{vmid}/status/stop":                  `{"check": ["perm", "/vms/{vmid}", ["VM.PowerMgmt"]]}`,
	"POST /nodes/{node}/qemu/{vmid}/status/shutdown":              `{"check": ["perm", "/vms/{vmid}", ["VM.PowerMgmt"]]}`,
	"POST /nodes/{node}/qemu/{vmid}/status/reboot":                `{"check": ["perm", "/vms/{vmid}", ["VM.PowerMgmt"]]}`,
	"POST /nodes/{node}/qemu/{vmid}/template":                     `{"check": ["perm", "/vms/{vmid}", ["VM.Allocate"]], "description": "You need 'VM.Allocate' permissions on /vms/{vmid}"}`,
	"POST /nodes/{node}/qemu/{vmid}/clone":                        `{"check": ["and", ["perm", "/vms/{vmid}", ["VM.Clone"]], ["or", ["perm", "/vms/{newid}", ["VM.Allocate"]], ["perm", "/pool/{pool}", ["VM.Allocate"], "require_param", "pool"]]], "description": "You need 'VM.Clone' permissions on /vms/{vmid}, and 'VM.Allocate' permissions on /vms/{newid} (or on the VM pool /pool/{pool}). You also need 'Datastore.AllocateSpace' on any used storage and 'SDN.Use' on any used bridge/vnet"}`,
	"GET /nodes/{node}/qemu/{vmid}/snapshot":                      `{"check": ["perm", "/vms/{vmid}", ["VM.Audit"]]}`,
	"POST /nodes/{node}/qemu/{vmid}/snapshot":                     `{"check": ["perm", "/vms/{vmid}", ["VM.Snapshot"]]}`,
	"POST /nodes/{node}/qemu/{vmid}/snapshot/{snapname}/rollback": `{"check": ["perm", "/vms/{vmid}", ["VM.Snapshot", "VM.Snapshot.Rollback"], "any", 1]}`,
	"DELETE /nodes/{node}/qemu/{vmid}/snapshot/{snapname}":        `{"check": ["perm", "/vms/{vmid}", ["VM.Snapshot"]]}`,
	"POST /nodes/{node}/qemu/{vmid}/migrate":                      `{"check": ["perm", "/vms/{vmid}", ["VM.Migrate"]]}`,
	"PUT /nodes/{node}/qemu/{vmid}/resize":                        `{"check": ["perm", "/vms/{vmid}", ["VM.Config.Disk"]]}`,
	"GET /storage":                                                `{"description": "Only list entries where you have 'Datastore.Audit' or 'Datastore.AllocateSpace' permissions on '/storage/<storage>'", "user": "all"}`,
	"GET /storage/{storage}":                                      `{"check": ["perm", "/storage/{storage}", ["Datastore.Allocate"]]}`,
	"GET /nodes/{node}/storage":                                   `{"description": "Only list entries where you have 'Datastore.Audit' or 'Datastore.AllocateSpace' permissions on '/storage/<storage>'", "user": "all"}`,
	"GET /nodes/{node}/storage/{storage}/status":                  `{"check": ["perm", "/storage/{storage}", ["Datastore.Audit", "Datastore.AllocateSpace"], "any", 1]}`,
	"GET /nodes/{node}/storage/{storage}/content":                 `{"check": ["perm", "/storage/{storage}", ["Datastore.Audit", "Datastore.AllocateSpace"], "any", 1]}`,
	"GET /nodes/{node}/storage/{storage}/content/{volume...}":     `{"description": "You need read access for the volume.", "user": "all"}`,
	"DELETE /nodes/{node}/storage/{storage}/content/{volume...}":  `{"description": "You need 'Datastore.Allocate' privilege on the storage (or 'Datastore.AllocateSpace' for backup volumes if you have VM.Backup privilege on the VM).", "user": "all"}`,
	"POST /nodes/{node}/storage/{storage}/upload":                 `{"check": ["perm", "/storage/{storage}", ["Datastore.AllocateTemplate"]]}`,
	"POST /nodes/{node}/storage/{storage}/download-url":           `{"check": ["and", ["perm", "/storage/{storage}", ["Datastore.AllocateTemplate"]], ["or", ["perm", "/", ["Sys.Audit", "Sys.Modify"]], ["perm", "/nodes/{node}", ["Sys.AccessNetwork"]]]], "description": "Requires allocation access on the storage and as this allows one to probe the (local!) host network indirectly it also requires one of Sys.Modify on / (for backwards compatibility) or the newer Sys.AccessNetwork privilege on the node."}`,
	"GET /nodes/{node}/tasks":                                     `{"description": "List task associated with the current user, or all task the user has 'Sys.Audit' permissions on /nodes/<node> (the <node> the task runs on).", "user": "all"}`,
	"GET /nodes/{node}/tasks/{upid}/status":                       `{"description": "The user needs 'Sys.Audit' permissions on '/nodes/<node>' if they are not the owner of the task.", "user": "all"}`,
	"GET /nodes/{node}/tasks/{upid}/log":                          `{"description": "The user needs 'Sys.Audit' permissions on '/nodes/<node>' if they aren't the owner of the task.", "user": "all"}`,
	"DELETE /nodes/{node}/tasks/{upid}":                           `{"description": "The user needs 'Sys.Modify' permissions on '/nodes/<node>' if they aren't the owner of the task.", "user": "all"}`,
	"GET /access/permissions":                                     `{"description": "Each user/token is allowed to dump their own permissions (or that of owned tokens). A user can dump the permissions of another user or their tokens if they have 'Sys.Audit' permission on /access.", "user": "all"}`,
}

// permissionCheck is a route's parsed schema permissions.
type permissionCheck struct {
	Check []any  `json:"check"`
	User  string `json:"user"`
}

var routeChecks = func() map[string]permissionCheck {
	out := map[string]permissionCheck{}
	for key, text := range routePermissions {
		var pc permissionCheck
		if err := json.Unmarshal([]byte(text), &pc); err != nil {
			panic(fmt.Sprintf("sandbox: permissions of %s: %v", key, err))
		}
		out[key] = pc
	}
	return out
}()

// accessRoutes serves the token's own effective privileges.
func (c *Cluster) accessRoutes() []route {
	return []route{{method: "GET", pattern: "/access/permissions", params: []string{"path", "userid"}, handle: c.permissions}}
}

// permissions answers GET /access/permissions: path → privilege → 1, for the given path, or
// for "/" and every path the token's ACLs name.
func (c *Cluster) permissions(k *call) (any, error) {
	if u := k.p.str("userid"); u != "" && u != k.user {
		if err := k.require("/access", true, "Sys.Audit"); err != nil {
			return nil, err
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t, _ := c.token(k.user)
	paths := []string{"/"}
	if p := k.p.str("path"); p != "" {
		paths = []string{path.Clean("/" + p)}
	} else {
		for _, a := range append(slices.Clone(t.ACLs), t.UserACLs...) {
			paths = append(paths, path.Clean("/"+a.Path))
		}
	}
	out := map[string]map[string]int{}
	for _, p := range paths {
		held := c.privileges(k.user, p)
		privs := map[string]int{}
		for _, priv := range allPrivileges {
			if held.has(priv) {
				privs[priv] = 1
			}
		}
		out[p] = privs
	}
	return out, nil
}

func vmPath(vmid int) string { return "/vms/" + strconv.Itoa(vmid) }

// mayCreate makes the checks the schema's description of POST /nodes/{node}/qemu names:
// VM.Allocate on the VM or its pool, Datastore.AllocateSpace on every storage a new disk uses,
// SDN.Use on every bridge a NIC uses. The caller holds c.mu.
func (k *call) mayCreate(vmid int, pool string, ch *configChange) error {
	if !k.may(vmPath(vmid), "VM.Allocate") && (pool == "" || !k.may("/pool/"+pool, "VM.Allocate")) {
		return permissionDenied(vmPath(vmid), "VM.Allocate")
	}
	for _, vol := range ch.add {
		storage, _, _ := strings.Cut(vol.VolID, ":")
		if !k.may("/storage/"+storage, "Datastore.AllocateSpace") {
			return permissionDenied("/storage/"+storage, "Datastore.AllocateSpace")
		}
	}
	for _, key := range sortedKeys(ch.conf) {
		if !strings.HasPrefix(key, "net") {
			continue
		}
		for _, opt := range strings.Split(ch.conf[key], ",") {
			if bridge, ok := strings.CutPrefix(opt, "bridge="); ok {
				if p := "/sdn/zones/localnetwork/" + bridge; !k.may(p, "SDN.Use") {
					return permissionDenied(p, "SDN.Use")
				}
			}
		}
	}
	return nil
}

// mayTask lets a task's owner at it, and others with priv on its node. The caller holds c.mu.
func (k *call) mayTask(t *task, priv string) error {
	if t.user == k.user || k.may("/nodes/"+t.node, priv) {
		return nil
	}
	return permissionDenied("/nodes/"+t.node, priv)
}

// SetTokenACLs replaces a token's own ACLs while the sandbox runs (privilege separation on), as
// an operator editing permissions in PVE would: tests use it to take a privilege away between
// a preflight and a step.
func (c *Cluster) SetTokenACLs(token string, acls []ACLConfig) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range c.cfg.Tokens {
		if c.cfg.Tokens[i].ID == token {
			c.cfg.Tokens[i].Privsep = true
			c.cfg.Tokens[i].ACLs = slices.Clone(acls)
		}
	}
}
