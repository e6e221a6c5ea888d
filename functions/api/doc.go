// Package api is the plumbing every endpoint shares: the dependencies handlers close over
// (Deps), the one handler entry point (Handle: path ids, If-Match and the strictly decoded
// body handed to the handler's decision, with the skeletons Get, ListPage, Edit and Delete on
// it), the roles the route table declares per route (Role, Require), path and query parsing,
// cursors, ETags, and access to the authenticated principal. It holds no endpoint of its own
// and no business logic.
package api
