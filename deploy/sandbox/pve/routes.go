package pve

import (
	"strings"

	"golang.org/x/crypto/ssh"
)

// apiRoutes is the whole PVE API subset the sandbox serves. Each area's file declares its
// routes next to their handlers.
func (c *Cluster) apiRoutes() []route {
	var routes []route
	for _, area := range [][]route{
		c.clusterRoutes(),
		c.poolRoutes(),
		c.storageRoutes(),
		c.qemuRoutes(),
		c.statusRoutes(),
		c.cloneRoutes(),
		c.snapshotRoutes(),
		c.taskRoutes(),
		c.accessRoutes(),
	} {
		routes = append(routes, area...)
	}
	return routes
}

func authorizedKeyLine(k ssh.PublicKey) string {
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(k)))
}
