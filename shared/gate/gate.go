package gate

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Defaults for the zero values of Config.
const (
	DefaultPrefix     = "horizon"
	DefaultTTL        = 30 * time.Second
	DefaultStaleAfter = 60 * time.Second
)

const (
	// forgetFactor: a waiter not seen for forgetFactor × StaleAfter is removed from the line,
	// not only skipped.
	forgetFactor = 10
	// maxBlock bounds one BLPOP of Acquire, so that ctx and the wait deadline are honoured
	// (go-redis cannot interrupt a blocking read) and a holder that died without releasing is
	// noticed. It must stay below the Redis client's ReadTimeout (go-redis default 3 s).
	maxBlock = 500 * time.Millisecond
	// releaseTimeout bounds Release, which runs even when the caller's ctx has ended.
	releaseTimeout = 5 * time.Second
	// wakeWindow and wakeRetry bound how long and how often a Waker is retried.
	wakeWindow = 2 * time.Second
	wakeRetry  = 25 * time.Millisecond
)

var (
	// ErrBusy is matched (errors.Is) by the *BusyError that TryAcquire and Acquire return when
	// another owner holds the gate or is ahead in line.
	ErrBusy = errors.New("node gate busy")
	// ErrLost is the cause (context.Cause) of a Lease's context when the lease was taken over or
	// could not be renewed in time: the holder must stop its work.
	ErrLost = errors.New("node gate lease lost")
	// ErrNotHolder is wrapped by Release's error when the lease had already expired, possibly
	// with another owner holding the gate now; that owner's lease is left alone.
	ErrNotHolder = errors.New("not the node gate holder")
	// ErrLeft is returned by TryAcquire and Acquire to an owner that left the node's line
	// (Leave: its step was canceled or will not build): it is never queued again, and an
	// Acquire waiting for it returns at once. Its work must not start.
	ErrLeft = errors.New("left the node gate line")
)

// IsBusy reports whether err says the gate is busy. Use it in asynq.Config.IsFailure so that
// waiting is never counted as a failure.
func IsBusy(err error) bool { return errors.Is(err, ErrBusy) }

// BusyError says who is in the way. The API shows it as "waiting for <Holder> on <Node>,
// <Position> in line".
type BusyError struct {
	Node string
	// Holder owns the lease, or is "" when the gate is free but another waiter is ahead.
	Holder string
	// Since is when Holder acquired the gate (zero when Holder is "").
	Since time.Time
	// Position is the caller's place in line: 1 means next.
	Position int
	// Head is the waiter first in line (the caller itself when Position is 1).
	Head string
}

func (e *BusyError) Error() string {
	if e.Holder == "" {
		return fmt.Sprintf("node %s gate busy: %s is ahead, position %d in line", e.Node, e.Head, e.Position)
	}
	return fmt.Sprintf("node %s gate busy: held by %s since %s, position %d in line",
		e.Node, e.Holder, e.Since.UTC().Format(time.RFC3339), e.Position)
}

// Is makes errors.Is(err, ErrBusy) true.
func (e *BusyError) Is(target error) bool { return target == ErrBusy }

// Waker brings owner's work forward when owner becomes first in line, so that it does not sit
// out its retry delay; AsynqWaker is the one Horizon uses. It returns false when it could not do
// so yet; the gate then calls it again every 25 ms for up to 2 s while owner is still waiting.
// It runs in a goroutine of its own with ctx bounding that window.
type Waker func(ctx context.Context, node, owner string) (done bool)

// Config configures a Gate. The zero value is usable.
type Config struct {
	// Prefix starts every key, e.g. "horizon" gives "horizon:gate:{pve-1}:lock". Tests use their
	// testkit namespace. Default DefaultPrefix.
	Prefix string
	// TTL is the lease's time to live; it is renewed every TTL/3 while held, and a dead holder's
	// lease is free after at most TTL. Default DefaultTTL.
	TTL time.Duration
	// StaleAfter is how long a waiter may go without asking (TryAcquire, Acquire, Enqueue) before
	// it is skipped; it keeps its place and is in line again the next time it asks. Set it above
	// the longest busy retry delay plus Asynq's scheduling delays. Default DefaultStaleAfter.
	StaleAfter time.Duration
	// Wake, when set, is called whenever a waiter becomes first in line: when the gate is
	// granted (for the waiter behind the new holder) and when it is released or the head leaves.
	Wake Waker
}

// Gate is the per-node build gate. It is safe for concurrent use.
type Gate struct {
	rdb redis.UniversalClient
	cfg Config
}

// New returns a Gate storing its state in rdb. It fails for negative durations.
func New(rdb redis.UniversalClient, cfg Config) (*Gate, error) {
	if cfg.TTL < 0 || cfg.StaleAfter < 0 {
		return nil, errors.New("gate config: durations must not be negative")
	}
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultPrefix
	}
	if cfg.TTL == 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.StaleAfter == 0 {
		cfg.StaleAfter = DefaultStaleAfter
	}
	if cfg.TTL < 3*time.Millisecond {
		return nil, errors.New("gate config: TTL must be at least 3ms")
	}
	return &Gate{rdb: rdb, cfg: cfg}, nil
}

// key returns the key of one part of node's gate. The braces make every key of a node hash to
// the same Redis Cluster slot, as the scripts require.
func (g *Gate) key(node, part string) string {
	return g.cfg.Prefix + ":gate:{" + node + "}:" + part
}

func (g *Gate) keys(node string, parts ...string) []string {
	ks := make([]string, len(parts))
	for i, p := range parts {
		ks[i] = g.key(node, p)
	}
	return ks
}

func checkNames(node, owner string) error {
	if node == "" || strings.ContainsAny(node, "{}") {
		return fmt.Errorf("gate: invalid node name %q", node)
	}
	if owner == "" {
		return errors.New("gate: empty owner")
	}
	return nil
}

func micros(d time.Duration) string { return strconv.FormatInt(d.Microseconds(), 10) }

func (g *Gate) staleArg() string  { return micros(g.cfg.StaleAfter) }
func (g *Gate) forgetArg() string { return micros(forgetFactor * g.cfg.StaleAfter) }

// Enqueue registers owner in node's line at the place readyAt gives it (earlier is ahead; ties
// are broken by owner), unless it is already in line or holds the gate. The engine calls it when
// a step becomes ready (run:advance), so that a node builds in the order steps became ready
// rather than the order their tasks happen to reach a worker. A zero readyAt means now.
//
// With asked, owner counts as having asked already: Behind refuses it from its first ask while
// others are ahead, as it does a waiter TryAcquire has refused. The engine registers so a step
// with nothing to look at before its turn (horizon.Step.MayBeUnneeded false), so that a burst
// of deploys does not read every step's work while only each node's next can build.
func (g *Gate) Enqueue(ctx context.Context, node, owner string, readyAt time.Time, asked bool) error {
	if err := checkNames(node, owner); err != nil {
		return err
	}
	score := ""
	if !readyAt.IsZero() {
		score = strconv.FormatInt(readyAt.UnixMicro(), 10)
	}
	mark := ""
	if asked {
		mark = "1"
	}
	err := enqueueScript.Run(ctx, g.rdb, g.keys(node, "lock", "waiters", "seen", "left:"+owner), owner, score, g.forgetArg(), mark).Err()
	if err != nil {
		return fmt.Errorf("enqueue %s at gate %s: %w", owner, node, err)
	}
	return nil
}

// TryAcquire takes node's gate for owner if it is free and owner is first in line (stale waiters
// are skipped), registering owner in line otherwise. It never blocks on the gate. It returns a
// *Lease, renewed in the background until Release, whose Context derives from ctx; or a
// *BusyError (errors.Is ErrBusy) saying who holds it and owner's position. If owner already
// holds the gate (a re-delivered task), the lease is renewed and returned again: both Lease
// values then renew it, and after either is released the other's Context is cancelled (cause
// ErrLost) at its next renewal, within TTL/3.
func (g *Gate) TryAcquire(ctx context.Context, node, owner string) (*Lease, error) {
	if err := checkNames(node, owner); err != nil {
		return nil, err
	}
	sent := time.Now()
	res, err := g.acquire(ctx, node, owner, "acquire")
	if err != nil {
		return nil, err
	}
	since, fence, other := micro(res[2]), integer(res[3]), str(res[5])
	l := newLease(ctx, g, node, owner, fence, since, sent)
	g.bringForward(node, other)
	return l, nil
}

// Behind returns the *BusyError that TryAcquire would return when owner has been refused by
// TryAcquire before and is still behind others (second in line or further), and nil otherwise:
// when owner is first in line, holds the gate, is not in the line, or asks for the first time
// (unless Enqueue registered it as asked). It never takes the gate nor queues owner, but counts
// as asking (owner does not go stale): a caller may ask it before it knows that owner is still
// a live attempt. A waiter asks it before it reads what its work needs, so that the reads are not
// repeated each time it asks while others are ahead; a first ask that must check that the work
// is still needed reads. It returns ErrLeft like TryAcquire.
func (g *Gate) Behind(ctx context.Context, node, owner string) error {
	if err := checkNames(node, owner); err != nil {
		return err
	}
	_, err := g.acquire(ctx, node, owner, "behind")
	return err
}

// acquire runs acquireScript in mode, returning its reply when granted ("acquire") or when the
// owner may go on ("behind"), and otherwise the *BusyError or ErrLeft.
func (g *Gate) acquire(ctx context.Context, node, owner, mode string) ([]any, error) {
	keys := g.keys(node, "lock", "waiters", "seen", "fence", "wake:"+owner, "left:"+owner)
	res, err := acquireScript.Run(ctx, g.rdb, keys, owner, g.cfg.TTL.Milliseconds(), g.staleArg(), g.forgetArg(), mode).Slice()
	if err != nil {
		return nil, fmt.Errorf("acquire gate %s: %w", node, err)
	}
	if len(res) != 6 {
		return nil, fmt.Errorf("acquire gate %s: unexpected reply %v", node, res)
	}
	switch integer(res[0]) {
	case -1:
		return nil, fmt.Errorf("acquire gate %s for %s: %w", node, owner, ErrLeft)
	case 0:
		return nil, &BusyError{Node: node, Holder: str(res[1]), Since: micro(res[2]), Position: int(integer(res[4])), Head: str(res[5])}
	}
	return res, nil
}

// Acquire is TryAcquire that, when owner is first in line behind a holder, waits up to wait for
// the holder to release (woken by the release itself, not by polling) before it gives up with
// the *BusyError. A waiter further back returns at once: at most one waiter per node waits here,
// so waiting holds at most one worker slot per node, and for at most wait.
func (g *Gate) Acquire(ctx context.Context, node, owner string, wait time.Duration) (*Lease, error) {
	deadline := time.Now().Add(wait)
	for {
		l, err := g.TryAcquire(ctx, node, owner)
		var busy *BusyError
		if !errors.As(err, &busy) || busy.Position != 1 {
			return l, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil, err
		}
		if err := g.awaitWake(ctx, node, owner, min(left, maxBlock)); err != nil {
			return nil, err
		}
	}
}

// awaitWake blocks until a release signals owner's wake list, or d passes.
func (g *Gate) awaitWake(ctx context.Context, node, owner string, d time.Duration) error {
	// BLPOP with a fractional timeout through Do: go-redis's BLPop rounds it up to whole seconds.
	secs := strconv.FormatFloat(max(d, time.Millisecond).Seconds(), 'f', 3, 64)
	err := g.rdb.Do(ctx, "BLPOP", g.key(node, "wake:"+owner), secs).Err()
	if err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("wait at gate %s: %w", node, err)
	}
	return nil
}

// Leave removes owner from node's line for good, e.g. for a cancelled step: from then on
// owner's TryAcquire and Acquire return ErrLeft without queueing it again, an Acquire of owner
// waiting for the gate returns at once, and Enqueue ignores it. Owner tokens name one attempt,
// so an attempt that left never needs the gate again; the mark is kept as long as a waiter is
// remembered (10 × StaleAfter). It does not release a lease owner holds (use Lease.Release).
// Leaving when not in line is not an error.
func (g *Gate) Leave(ctx context.Context, node, owner string) error {
	if err := checkNames(node, owner); err != nil {
		return err
	}
	keys := g.keys(node, "lock", "waiters", "seen", "left:"+owner, "wake:"+owner)
	res, err := leaveScript.Run(ctx, g.rdb, keys, owner, g.staleArg(), g.forgetArg()).Slice()
	if err != nil {
		return fmt.Errorf("leave gate %s: %w", node, err)
	}
	if len(res) == 2 {
		g.signal(ctx, node, str(res[1]))
	}
	return nil
}

// signal tells next, now first in line at a free gate, to try again: it unblocks next's Acquire,
// and brings its task forward through the Waker.
func (g *Gate) signal(ctx context.Context, node, next string) {
	if next == "" {
		return
	}
	wake := g.key(node, "wake:"+next)
	// A lost signal costs next only time (its Acquire re-checks every 500 ms, its task retries on
	// its own), so the error is dropped. The list expires in case nobody pops it.
	_, _ = g.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.RPush(ctx, wake, "1")
		p.PExpire(ctx, wake, g.cfg.StaleAfter)
		return nil
	})
	g.bringForward(node, next)
}

// bringForward runs the Waker for owner in the background, retrying while it reports not done
// and owner is still waiting.
func (g *Gate) bringForward(node, owner string) {
	if g.cfg.Wake == nil || owner == "" {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), wakeWindow)
		defer cancel()
		t := time.NewTicker(wakeRetry)
		defer t.Stop()
		for !g.cfg.Wake(ctx, node, owner) {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if err := g.rdb.ZScore(ctx, g.key(node, "waiters"), owner).Err(); err != nil {
				return // redis.Nil: no longer waiting (it acquired or left); otherwise give up
			}
		}
	}()
}

// Status is a snapshot of one node's gate, for read models.
type Status struct {
	Node string
	// Holder owns the lease; "" when the gate is free.
	Holder string
	// Since is when Holder acquired the gate, and Fence the fencing token it got.
	Since time.Time
	Fence int64
	// Waiters are the waiters that are not stale, first in line first.
	Waiters []Waiter
}

// Waiter is one entry in a node's line.
type Waiter struct {
	Owner string
	// ReadyAt orders the line: the time given to Enqueue, or of the first TryAcquire.
	ReadyAt time.Time
	// Seen is when the waiter last asked.
	Seen time.Time
}

// Status returns node's holder and line.
func (g *Gate) Status(ctx context.Context, node string) (Status, error) {
	if err := checkNames(node, "-"); err != nil {
		return Status{}, err
	}
	res, err := statusScript.Run(ctx, g.rdb, g.keys(node, "lock", "waiters", "seen"), g.staleArg()).Slice()
	if err != nil {
		return Status{}, fmt.Errorf("status of gate %s: %w", node, err)
	}
	if len(res) < 3 || (len(res)-3)%3 != 0 {
		return Status{}, fmt.Errorf("status of gate %s: unexpected reply %v", node, res)
	}
	st := Status{Node: node, Holder: str(res[0]), Since: micro(res[1]), Fence: integer(res[2])}
	for i := 3; i < len(res); i += 3 {
		st.Waiters = append(st.Waiters, Waiter{Owner: str(res[i]), ReadyAt: micro(res[i+1]), Seen: micro(res[i+2])})
	}
	return st, nil
}

// str, integer and micro read script replies, whose elements are strings or integers; an empty
// or malformed element reads as the zero value.
func str(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case int64:
		return strconv.FormatInt(v, 10)
	}
	return ""
}

func integer(v any) int64 {
	if n, ok := v.(int64); ok {
		return n
	}
	// Strings may be sorted-set scores, which Redis prints as doubles.
	f, _ := strconv.ParseFloat(str(v), 64)
	return int64(f)
}

func micro(v any) time.Time {
	n := integer(v)
	if n == 0 {
		return time.Time{}
	}
	return time.UnixMicro(n)
}
