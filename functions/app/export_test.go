package app

import (
	"regexp"

	"horizon/functions/api"
)

// RouteRoles is the role the route table declares for each /v1 route, keyed "METHOD path" with
// the path as openapi.yaml writes it (/v1/stacks/{id}).
func RouteRoles(d api.Deps) map[string]api.Role {
	param := regexp.MustCompile(`:([a-z_]+)`)
	m := map[string]api.Role{}
	add := func(r route) { m[r.method+" /v1"+param.ReplaceAllString(r.path, "{$1}")] = r.role }
	for _, r := range routes(d) {
		add(r)
	}
	add(signInCodes(d))
	for _, r := range streamRoutes(d) {
		add(r.route)
	}
	return m
}
