package stacks

import (
	"context"
	"errors"

	"horizon/shared/horizon"
	"horizon/shared/store"
)

// checkISO records why a machine cannot use the ISO it picked, if it cannot: the ISO must be
// built, of the machine's cluster, and on a storage the machine's node reaches — shared, or
// the node's own (horizon.ISO.Reach says which).
func checkISO(ctx context.Context, q store.Querier, p *horizon.Problems, field func(string) string, cfg horizon.ExecutionConfig, srv *horizon.ProxmoxServer) error {
	iso, err := store.ISOGet(ctx, q, *cfg.ISOID)
	if errors.Is(err, horizon.ErrNotFound) {
		p.Add(field("iso_id"), "is not an ISO")
		return nil
	}
	if err != nil {
		return err
	}
	if _, err := iso.Reach(srv.ID, srv.Storages, cfg.Node); err != nil {
		p.Add(field("iso_id"), "%s", err.Error())
	}
	return nil
}
