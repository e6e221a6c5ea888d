package logstream

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"horizon/shared/metrics"
	"horizon/shared/rstream"
)

// fallbackBit marks a fallback id's sequence number. Redis numbers entries within a
// millisecond from 0, so it never reaches 2^62 and the two kinds of id cannot collide;
// stream_seq is a signed bigint, so bit 63 stays clear.
const fallbackBit = 1 << 62

// flushLoop gives pending lines their ids, through XADD or a fallback, and hands them to the
// copy goroutine. It exits once Close has begun and nothing is pending.
func (w *Writer) flushLoop() {
	defer close(w.flushed)
	for {
		select {
		case <-w.flushKick:
			linger(w.c.cfg.FlushInterval, w.flushKick, w.closed)
		case <-w.closed:
		}
		for {
			w.mu.Lock()
			n := min(len(w.pending), w.c.cfg.FlushLines)
			batch := w.pending[:n:n]
			w.pending = w.pending[n:]
			if len(w.pending) == 0 {
				w.pending = nil // let the backing array go
			}
			done := n == 0 && w.closing
			w.mu.Unlock()
			if done {
				w.noticeAtClose()
				return
			}
			if n == 0 {
				break
			}
			batch = w.assign(batch)
			w.mu.Lock()
			if len(w.copying) == 0 || len(w.copying) < w.c.cfg.CopyLines && len(w.copying)+len(batch) >= w.c.cfg.CopyLines {
				kick(w.copyKick)
			}
			w.copying = append(w.copying, batch...)
			w.mu.Unlock()
		}
	}
}

// assign gives every line of batch an id: from Redis, through one pipelined XADD … MAXLEN ~
// per line, or, for the lines Redis did not take, a fallback id. While Redis is failing it is
// tried again only every RedisRetry, so a dead Redis costs each batch nothing. It returns the
// batch, preceded by a notice line when Redis has just come back.
func (w *Writer) assign(batch []Line) []Line {
	sent := 0
	if time.Now().After(w.retryAt) && !w.abandoned() {
		if w.unnoticed > 0 {
			notice := Line{Run: w.run, FD: Horizon, At: time.Now(),
				Text: fmt.Sprintf("%d log lines were written while the live log was unavailable; they are in the downloaded log", w.unnoticed)}
			w.mu.Lock()
			w.bytes += lineSize(&notice)
			w.stats.Accepted++
			w.mu.Unlock()
			batch = append([]Line{notice}, batch...)
		}
		var err error
		sent, err = w.xadd(batch)
		if err != nil {
			w.retryAt = time.Now().Add(w.c.cfg.RedisRetry)
			w.mu.Lock()
			if w.redisErr == nil {
				w.redisErr = err
			}
			w.mu.Unlock()
		}
		if sent > 0 {
			w.unnoticed = 0
		}
	}
	for i := sent; i < len(batch); i++ {
		batch[i].ID = w.fallbackID()
	}
	w.mu.Lock()
	w.stats.Streamed += int64(sent)
	w.stats.Fallback += int64(len(batch) - sent)
	w.mu.Unlock()
	w.unnoticed += len(batch) - sent
	return batch
}

// noticeAtClose tells live followers, once more at the end, about lines that only reached
// Postgres: the notice otherwise rides on the next batch, and a step that ends while Redis is
// failing, or within RedisRetry of its return, has none. Redis is tried now whatever the
// retry interval; if it still fails the notice is stored like the lines it speaks of.
func (w *Writer) noticeAtClose() {
	if w.unnoticed == 0 || w.abandoned() {
		return
	}
	w.retryAt = time.Time{}
	batch := w.assign(nil)
	w.mu.Lock()
	w.copying = append(w.copying, batch...)
	kick(w.copyKick)
	w.mu.Unlock()
}

// xadd adds lines to the stream in order and returns how many Redis took, all of them unless
// err is set. Lines after the first failure are reported as not taken even when the failure
// hides whether Redis applied them (a broken connection): such a line gets a fallback id for
// Postgres and may also be in the stream.
func (w *Writer) xadd(lines []Line) (int, error) {
	ctx := context.Background() // bounded by the client's read and write timeouts
	args := func(l *Line, id string) *redis.XAddArgs {
		return &redis.XAddArgs{Stream: w.key, MaxLen: w.c.cfg.MaxLen, Approx: true, ID: id, Values: values(l)}
	}
	sent := 0
	if w.last.Seq&fallbackBit != 0 {
		// The last id was a fallback (ms M): ask for an id in a later millisecond, so that this
		// writer's lines stay in order even if Redis's clock is behind ours or the outage
		// lasted less than a millisecond. Redis refuses an explicit id behind its top entry;
		// then its top is already later than M, and any new id is too.
		id, err := w.c.rdb.XAdd(ctx, args(&lines[0], strconv.FormatUint(w.last.MS+1, 10)+"-*")).Result()
		if redis.HasErrorPrefix(err, "The ID specified in XADD is equal or smaller") {
			id, err = w.c.rdb.XAdd(ctx, args(&lines[0], "*")).Result()
		}
		if err != nil {
			return 0, fmt.Errorf("add log line to %s: %w", w.key, err)
		}
		lines[0].ID, _ = rstream.ParseID(id) // an id Redis returned
		w.last = lines[0].ID
		sent = 1
	}
	if sent == len(lines) {
		return sent, nil
	}
	pipe := w.c.rdb.Pipeline()
	cmds := make([]*redis.StringCmd, 0, len(lines)-sent)
	for i := sent; i < len(lines); i++ {
		cmds = append(cmds, pipe.XAdd(ctx, args(&lines[i], "*")))
	}
	// The count behind /metrics' lines written per second, in the same round trip.
	pipe.IncrBy(ctx, metrics.LogLinesKey(w.c.cfg.Prefix), int64(len(cmds)))
	if !w.expiresSet {
		// Expire even a run that never ends; End sets the real retention. After the XADDs:
		// EXPIRE on a stream that does not exist yet does nothing. NX: the first writer of
		// the run sets it, XADD keeps it, and a later writer does not extend it.
		pipe.ExpireNX(ctx, w.key, w.c.cfg.MaxAge)
	}
	_, err := pipe.Exec(ctx)
	for _, cmd := range cmds {
		if cmd.Err() != nil {
			return sent, fmt.Errorf("add log lines to %s: %w", w.key, cmd.Err())
		}
		lines[sent].ID, _ = rstream.ParseID(cmd.Val()) // an id Redis returned
		w.last = lines[sent].ID
		sent++
	}
	if err == nil {
		w.expiresSet = true
	}
	return sent, nil
}

// fallbackID returns the next id for a line Redis did not take. It keeps the writer's order:
// it stays in the millisecond of the writer's last id and sorts after it (fallbackBit), and
// the next XADD asks Redis for a later millisecond (xadd). A writer that never reached Redis
// starts from its own clock. The sequence number carries a random 29-bit tag of the writer
// and a counter, so two writers of one run falling back in the same millisecond collide only
// if their tags are equal (one chance in 2^29).
func (w *Writer) fallbackID() rstream.ID {
	ms := w.last.MS
	if w.last.IsZero() {
		ms = uint64(time.Now().UnixMilli())
	}
	w.fallbacks++
	w.last = rstream.ID{MS: ms, Seq: fallbackBit | w.tag<<32 | w.fallbacks&(1<<32-1)}
	return w.last
}

func (w *Writer) abandoned() bool {
	select {
	case <-w.abandon:
		return true
	default:
		return false
	}
}
