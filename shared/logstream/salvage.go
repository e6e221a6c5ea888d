package logstream

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"horizon/shared/rstream"
	"horizon/shared/store"
)

// StoreStreamed stores in log_lines the lines of run's stream that it lacks, and returns how
// many it stored. A Writer adds a line to Redis before it stores it in Postgres, so a writer
// that dies between the two — its worker SIGKILLed, or Postgres down until it did — leaves
// lines that live followers saw and log_lines does not have. The workers call StoreStreamed
// when a step is taken over after a lost attempt, and before End (not for a stack being
// removed, whose lines are deleted), so the durable log holds every line a follower saw.
//
// The copy is of the stream's entries as they are: masked by the writer that added them (the
// masker is never bypassed), under their stream ids, so the order and the ids followers saw
// are kept. It is idempotent, and safe beside another StoreStreamed or a writer still
// storing the same lines (a stale delivery): a line already stored is skipped, under its id or
// as the fallback twin of a line whose XADD outcome its writer never learned (store.
// LogLinesInsertStreamed). A stream that Redis lost, or that has expired, has nothing to copy;
// entries trimmed (MaxLen) before the copy are not copied. It reads the whole stream, a page
// at a time, and asks Postgres only for the ids of each page's range; it sends a line's text
// only when the line is missing.
func (c *Client) StoreStreamed(ctx context.Context, run, stack uuid.UUID) (int64, error) {
	key := c.Key(run)
	var stored int64
	start := "-"
	for {
		entries, err := c.rdb.XRangeN(ctx, key, start, "+", int64(c.cfg.PageSize)).Result()
		if err != nil {
			return stored, fmt.Errorf("read log stream %s: %w", key, err)
		}
		if len(entries) == 0 {
			return stored, nil
		}
		lines := make([]Line, 0, len(entries))
		for _, e := range entries {
			m, _ := decode(e)
			if m.Kind != KindLine {
				continue
			}
			m.Line.ID, _ = rstream.ParseID(e.ID) // an id Redis returned
			m.Line.Run = run
			lines = append(lines, m.Line)
		}
		if len(lines) > 0 {
			have, err := store.LogLinesStoredBetween(ctx, c.db, run, toPos(lines[0].ID), toPos(lines[len(lines)-1].ID))
			if err != nil {
				return stored, err
			}
			var missing []store.LogLine
			for i := range lines {
				p := toPos(lines[i].ID)
				for len(have) > 0 && (have[0].MS < p.MS || have[0].MS == p.MS && have[0].Seq < p.Seq) {
					have = have[1:]
				}
				if len(have) > 0 && have[0] == p {
					continue
				}
				missing = append(missing, toRow(&lines[i], stack))
			}
			if len(missing) > 0 {
				n, err := store.LogLinesInsertStreamed(ctx, c.db, missing, fallbackBit)
				stored += n
				if err != nil {
					return stored, err
				}
			}
		}
		if len(entries) < c.cfg.PageSize {
			return stored, nil
		}
		start = "(" + entries[len(entries)-1].ID
	}
}
