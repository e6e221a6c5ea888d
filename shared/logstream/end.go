package logstream

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"horizon/shared/rstream"
	"horizon/shared/store"
)

// End ends run's log: it appends the eof entry (type=eof, status) to the stream and sets the
// stream to expire after expire (Config.Retention if expire ≤ 0; XADD does not touch a TTL, so
// this is done once, here), then records the end in log_ends. Call it after every Writer of
// the run is closed, and after StoreStreamed unless the run's lines are being deleted:
// followers stop at the eof, and a follower replaying from Postgres trusts log_ends to mean
// every line is stored.
//
// If Redis fails the end is still recorded in Postgres, with an id after any line's, and the
// error is returned: followers connected now are not told (the stream keeps its first-write
// expiry, Config.MaxAge), followers that connect later are. Calling End again for a run adds
// another eof to the stream; log_ends keeps the first.
func (c *Client) End(ctx context.Context, run, stack uuid.UUID, status string, expire time.Duration) error {
	if expire <= 0 {
		expire = c.cfg.Retention
	}
	key := c.Key(run)
	now := time.Now()
	var xadd *redis.StringCmd
	_, err := c.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		xadd = p.XAdd(ctx, &redis.XAddArgs{Stream: key, MaxLen: c.cfg.MaxLen, Approx: true, Values: []string{
			fType, typeEOF, fStatus, status, fTS, strconv.FormatInt(now.UnixMicro(), 10),
		}})
		p.Expire(ctx, key, expire)
		return nil
	})
	var errs []error
	id := rstream.ID{MS: uint64(now.UnixMilli()), Seq: math.MaxInt64}
	if err != nil {
		errs = append(errs, fmt.Errorf("end log stream %s: %w", key, err))
	} else {
		id, _ = rstream.ParseID(xadd.Val()) // an id Redis returned
	}
	if err := store.LogEndInsert(ctx, c.db, store.LogEnd{RunID: run, StackID: stack, Pos: toPos(id), Status: status, At: now}); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// DeleteStreams deletes the log streams of runs (of a removed stack; Postgres's copy goes in
// the transaction that removes it).
func (c *Client) DeleteStreams(ctx context.Context, runs []uuid.UUID) error {
	if len(runs) == 0 {
		return nil
	}
	keys := make([]string, len(runs))
	for i, r := range runs {
		keys[i] = c.Key(r)
	}
	if err := c.rdb.Del(ctx, keys...).Err(); err != nil {
		return fmt.Errorf("delete log streams: %w", err)
	}
	return nil
}
