package auth

import (
	"slices"

	"github.com/google/uuid"
)

// Role is a user's role. Roles are global: an admin administers the whole installation; a
// member acts on the objects of their teams; a viewer only reads them.
type Role string

const (
	RoleAdmin  Role = "admin"
	RoleMember Role = "member"
	RoleViewer Role = "viewer"
)

// Valid reports whether r is one of the three roles.
func (r Role) Valid() bool { return r == RoleAdmin || r == RoleMember || r == RoleViewer }

// TokenScope is what an API token may call. A scope only ever narrows what the token's user
// may do (their role and teams still apply): it never grants anything the role lacks.
//
// The scopes are nested, each opening everything the narrower ones open:
//   - prometheus: only GET /v1/prometheus/targets, so that the credential a Prometheus server
//     keeps on disk can neither change nor read anything else;
//   - read: every GET and event stream of the user's teams (and minting stream tokens);
//   - deploy: read, plus starting and stopping work on existing stacks (deploy, retry, cancel,
//     run again, run an action) — no edits, no removal, no catalogue: what a chat-ops bot does;
//   - full: acts as its user on every route.
//
// The API's route table declares, per route, the narrowest scope that opens it (Opens).
type TokenScope string

const (
	TokenFull       TokenScope = "full"
	TokenDeploy     TokenScope = "deploy"
	TokenRead       TokenScope = "read"
	TokenPrometheus TokenScope = "prometheus"
)

// TokenScopes returns every scope, narrowest first.
func TokenScopes() []TokenScope {
	return []TokenScope{TokenPrometheus, TokenRead, TokenDeploy, TokenFull}
}

// Valid reports whether s is one of the token scopes.
func (s TokenScope) Valid() bool { return s.rank() > 0 }

// Opens reports whether a token of scope s opens a route that needs scope need. An unknown
// scope opens nothing and is opened by nothing.
func (s TokenScope) Opens(need TokenScope) bool {
	return s.rank() > 0 && need.rank() > 0 && s.rank() >= need.rank()
}

// rank orders the scopes by breadth; 0 is not a scope.
func (s TokenScope) rank() int { return slices.Index(TokenScopes(), s) + 1 }

// Principal is who a request acts as: the token's user, their role and teams, and what the
// token may call.
type Principal struct {
	UserID  uuid.UUID
	TokenID uuid.UUID
	Name    string
	Role    Role
	// Teams the user belongs to, sorted. Admins see every team regardless.
	Teams []uuid.UUID
	// TokenScope limits the routes the token opens (the API's authentication enforces it).
	TokenScope TokenScope
}

// IsAdmin reports whether the principal administers the installation.
func (p Principal) IsAdmin() bool { return p.Role == RoleAdmin }

// CanWrite reports whether the principal may change anything at all (viewers may not).
func (p Principal) CanWrite() bool { return p.Role == RoleAdmin || p.Role == RoleMember }

// InTeam reports whether the principal may see objects of team (admins see all teams).
func (p Principal) InTeam(team uuid.UUID) bool {
	if p.IsAdmin() {
		return true
	}
	_, found := slices.BinarySearchFunc(p.Teams, team, func(a, b uuid.UUID) int {
		return slices.Compare(a[:], b[:])
	})
	return found
}

// Scope is the set of teams whose objects a query may return. It is what store queries take,
// so that team scoping is an argument and cannot be forgotten.
type Scope struct {
	// All is true for admins: every team.
	All bool
	// Teams is the allowed set when All is false.
	Teams []uuid.UUID
}

// Scope returns the principal's read scope.
func (p Principal) Scope() Scope {
	if p.IsAdmin() {
		return Scope{All: true}
	}
	return Scope{Teams: p.Teams}
}

// TeamIDs returns the scope's teams as a slice for SQL (`team_id = ANY($n)`), or nil when the
// scope is all teams; queries test `$all OR team_id = ANY($teams)`.
func (s Scope) TeamIDs() []uuid.UUID {
	if s.All {
		return nil
	}
	if s.Teams == nil {
		return []uuid.UUID{}
	}
	return s.Teams
}
