package nagios

import (
	"context"
	"time"

	"github.com/google/uuid"

	"horizon/shared/secrets"
	"horizon/shared/store"
)

// discoverTimeout bounds one discovery.
const discoverTimeout = 30 * time.Second

// Rediscover reads what a stored server's CGIs list now and records it (or, on failure, why,
// keeping the last lists). It returns the discovery's error after recording it.
func Rediscover(ctx context.Context, db store.Querier, box *secrets.Box, id uuid.UUID) error {
	n, err := store.NagiosServerGet(ctx, db, id)
	if err != nil {
		return err
	}
	c, _, err := Open(box, n)
	if c == nil {
		return err
	}
	dctx, cancel := context.WithTimeout(ctx, discoverTimeout)
	defer cancel()
	found, err := c.Discover(dctx)
	if err != nil {
		why := err.Error()
		if rerr := store.NagiosServerDiscovered(ctx, db, id, nil, nil, &why); rerr != nil {
			return rerr
		}
		return err
	}
	return store.NagiosServerDiscovered(ctx, db, id, found.Hostgroups, found.Commands, nil)
}

// RediscoverAll rediscovers every registered server, one after the other, returning how many
// failed (each failure is recorded on its server).
func RediscoverAll(ctx context.Context, db store.Querier, box *secrets.Box) (failed int, err error) {
	var after *uuid.UUID
	for {
		ns, next, err := store.NagiosServerList(ctx, db, store.Page{After: after, Limit: 100})
		if err != nil {
			return failed, err
		}
		for _, n := range ns {
			if err := Rediscover(ctx, db, box, n.ID); err != nil {
				if ctx.Err() != nil {
					return failed, ctx.Err()
				}
				failed++
			}
		}
		if next == nil {
			return failed, nil
		}
		after = next
	}
}
