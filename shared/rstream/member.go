package rstream

import "context"

// Member is one subscriber of a Hub's stream. Its queue is bounded by Config.Buffer; it is not
// safe for concurrent use by several goroutines.
type Member[T any] struct {
	h     *Hub[T]
	s     *stream[T]
	after ID // the member already has everything up to here: the hub skips it

	// Guarded by h.mu.
	queue []batch[T]
	bytes int
	err   error // why the member ended: ErrLagging or ErrClosed
	ready chan struct{}
}

// Next returns the next entries in order, waiting until there are some. It returns
// ErrLagging once the member has been dropped (entries still queued then are discarded: the
// caller resumes from the last id it handled), ErrClosed after Leave or Hub.Close, or ctx's
// error. The entries are shared with other members and must not be modified.
func (m *Member[T]) Next(ctx context.Context) ([]Entry[T], error) {
	for {
		m.h.mu.Lock()
		if len(m.queue) > 0 {
			b := m.queue[0]
			m.queue[0] = batch[T]{} // release the entries as soon as the caller does
			m.queue = m.queue[1:]
			m.bytes -= b.bytes
			m.h.mu.Unlock()
			return b.entries, nil
		}
		err := m.err
		m.h.mu.Unlock()
		if err != nil {
			return nil, err
		}
		select {
		case <-m.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Leave removes the member from its stream; the stream's reader stops within Config.Block
// once its last member has left. Leave may be called more than once.
func (m *Member[T]) Leave() {
	m.h.mu.Lock()
	defer m.h.mu.Unlock()
	m.end(ErrClosed)
}

// fillGap reads the entries after m.after up to and including upTo, which the stream's reader
// fanned out before m joined, and queues them ahead of everything the reader pushes later.
func (m *Member[T]) fillGap(ctx context.Context, upTo ID) error {
	var gap batch[T]
	for cur := m.after; cur.Less(upTo); {
		p, err := ReadPage(ctx, m.h.rdb, m.s.key, cur, m.h.cfg.Count)
		if err != nil {
			return err
		}
		if p.Trimmed || !p.Exists {
			m.h.mu.Lock()
			m.drop()
			m.h.mu.Unlock()
			return nil
		}
		for _, e := range m.h.decodeAll(p.Entries).entries {
			if upTo.Less(e.ID) {
				break
			}
			gap.entries = append(gap.entries, e)
			gap.bytes += e.Size
			cur = e.ID
		}
		if int64(len(p.Entries)) < m.h.cfg.Count {
			break
		}
	}
	m.h.mu.Lock()
	defer m.h.mu.Unlock()
	if m.err != nil || len(gap.entries) == 0 {
		return nil
	}
	if m.bytes+gap.bytes > m.h.cfg.Buffer {
		m.drop()
		return nil
	}
	m.queue = append([]batch[T]{gap}, m.queue...)
	m.bytes += gap.bytes
	m.signal()
	return nil
}

// push queues the part of b the member does not have yet, or drops the member if that would
// exceed its buffer. A member that has taken everything takes any batch, so that one XREAD
// larger than the buffer cannot drop a member that keeps up. The caller holds h.mu.
func (m *Member[T]) push(b batch[T]) {
	b = b.after(m.after)
	if len(b.entries) == 0 {
		return
	}
	if m.bytes > 0 && m.bytes+b.bytes > m.h.cfg.Buffer {
		m.drop()
		return
	}
	m.queue = append(m.queue, b)
	m.bytes += b.bytes
	m.signal()
}

// drop ends the member as lagging. The caller holds h.mu.
func (m *Member[T]) drop() {
	if m.err == nil {
		m.h.dropped++
	}
	m.end(ErrLagging)
}

// end removes the member from its stream and releases its queue; the first reason sticks.
// The caller holds h.mu.
func (m *Member[T]) end(err error) {
	if m.err != nil {
		return
	}
	m.err = err
	m.queue, m.bytes = nil, 0
	delete(m.s.members, m)
	m.signal()
}

func (m *Member[T]) signal() {
	select {
	case m.ready <- struct{}{}:
	default: // a wake-up is already pending
	}
}
