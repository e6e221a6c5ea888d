package template

import (
	"slices"
	"sync"
)

// moduleCacheSize bounds the modules Inspect keeps in memory: a few KB each.
const moduleCacheSize = 1024

// moduleCache keeps what LoadModule read of a module at a commit, by repository, commit and
// path, for the next Inspect of the same source: a version of a template uploaded again, or a
// stack created from a branch that has not moved, parses no HCL. A commit is immutable, so an
// entry is never stale and each API replica may keep its own (nothing to share or invalidate);
// only modules that loaded are kept (an error is reported afresh). When full, the oldest entry
// goes.
var moduleCache = &modCache{entries: map[modKey]*Module{}}

type modKey struct{ repo, commit, path string }

type modCache struct {
	mu      sync.Mutex
	entries map[modKey]*Module
	order   []modKey // insertion order, for eviction
}

func (c *modCache) get(k modKey) (*Module, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m, ok := c.entries[k]
	if !ok {
		return nil, false
	}
	return m.clone(), true
}

func (c *modCache) put(k modKey, m *Module) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[k]; ok {
		return
	}
	if len(c.order) >= moduleCacheSize {
		delete(c.entries, c.order[0])
		c.order = c.order[1:]
	}
	c.entries[k] = m.clone()
	c.order = append(c.order, k)
}

// clone copies what a caller may change (Commit, the slices' elements).
func (m *Module) clone() *Module {
	c := *m
	c.Variables, c.Outputs = slices.Clone(m.Variables), slices.Clone(m.Outputs)
	return &c
}
