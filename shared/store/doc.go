// Package store is Horizon's only door to Postgres, the source of truth.
//
// Operations are package functions taking (ctx, q Querier, …) so that callers compose several in
// one transaction and the transaction is visible in the signature. Names put the resource first
// (NetworkGet, NetworkList, AddressAttach). Every query that reads team-owned data takes the
// caller's scope (auth.Principal) as an argument, so authorisation cannot be forgotten.
//
// Driver errors are translated here and nowhere else: pgx.ErrNoRows becomes horizon.ErrNotFound
// and a unique violation becomes a *horizon.ConflictError naming the field it protects.
package store
