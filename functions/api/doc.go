// Package api is the plumbing every endpoint shares: the dependencies handlers close over
// (Deps), strict JSON decoding, path and query parsing, cursors, ETags, and access to the
// authenticated principal. It holds no endpoint of its own and no business logic.
package api
