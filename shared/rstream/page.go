package rstream

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Page is what ReadPage saw, atomically: some entries of a stream and the stream's bounds at
// that instant.
type Page struct {
	// Entries are up to n entries after the id asked for, in order.
	Entries []redis.XMessage
	// Exists is false when the key does not exist (never written, expired, or deleted); every
	// other field is then zero.
	Exists bool
	// Trimmed reports that entries after the id asked for may have been trimmed away
	// (MAXLEN) before this read: they would be missing between that id and First. It is
	// exact except when that id is itself the last entry trimmed, where it says true.
	Trimmed bool
	// First is the oldest entry still in the stream; Last is the last id Redis generated
	// (the newest entry, or a trimmed one if the stream is empty).
	First, Last ID
	// Added is how many entries the stream ever had (XINFO entries-added) and Length how
	// many it has: since Horizon never XDELs, the Added − Length entries before First were
	// trimmed.
	Added, Length int64
}

// ReadPage reads up to n entries of key after the id after (exclusive), together with the
// stream's bounds, in one MULTI so that the two agree. Trimming is read from XINFO STREAM's
// entries-added (Redis ≥ 7.0): Horizon never XDELs, so a stream holding fewer entries than
// were added has been trimmed, of entries older than its first.
func ReadPage(ctx context.Context, rdb redis.Cmdable, key string, after ID, n int64) (Page, error) {
	var (
		info *redis.XInfoStreamCmd
		rng  *redis.XMessageSliceCmd
	)
	_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		info = p.XInfoStream(ctx, key)
		rng = p.XRangeN(ctx, key, "("+after.String(), "+", n)
		return nil
	})
	if redis.HasErrorPrefix(info.Err(), "no such key") {
		return Page{}, nil
	}
	if err != nil {
		return Page{}, fmt.Errorf("read stream %s after %s: %w", key, after, err)
	}
	in := info.Val()
	p := Page{Entries: rng.Val(), Exists: true, First: mustParse(in.FirstEntry.ID), Last: mustParse(in.LastGeneratedID),
		Added: in.EntriesAdded, Length: in.Length}
	p.Trimmed = trimmedAfter(in, p.First, p.Last, after)
	return p, nil
}

// trimmedAfter reports whether entries after the id after may have been trimmed from a
// stream described by in, whose first entry is first and last generated id last.
func trimmedAfter(in *redis.XInfoStream, first, last, after ID) bool {
	if in.EntriesAdded <= in.Length {
		return false // nothing was ever trimmed
	}
	if in.Length == 0 {
		return after.Less(last) // everything was
	}
	return after.Less(first)
}

// lostBefore reports whether entries of key between after and next, the first entry an XREAD
// from after returned, may have been trimmed before that read. Asked after the read, it can
// only know that nothing was lost when the stream's first entry is now before next: then it
// was before next at the read too, and since the read returned next and not it, not after
// after either. A missing key reports false: there is nothing left to lose.
func lostBefore(ctx context.Context, rdb redis.Cmdable, key string, after, next ID) (bool, error) {
	in, err := rdb.XInfoStream(ctx, key).Result()
	if redis.HasErrorPrefix(err, "no such key") {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("inspect stream %s: %w", key, err)
	}
	first := mustParse(in.FirstEntry.ID)
	return trimmedAfter(in, first, mustParse(in.LastGeneratedID), after) && !first.Less(next), nil
}

// Tail returns the last id Redis generated for key: where to start following from now on. A
// missing key has the zero id.
func Tail(ctx context.Context, rdb redis.Cmdable, key string) (ID, error) {
	in, err := rdb.XInfoStream(ctx, key).Result()
	if redis.HasErrorPrefix(err, "no such key") {
		return ID{}, nil
	}
	if err != nil {
		return ID{}, fmt.Errorf("inspect stream %s: %w", key, err)
	}
	return mustParse(in.LastGeneratedID), nil
}
