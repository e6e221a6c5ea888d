package gitsource

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// Config configures a Cache.
type Config struct {
	// Dir is the cache directory, shared by every process of the host that uses the same
	// repositories. Created if missing.
	Dir string
	// Timeout bounds each git command (a listing, a fetch, a checkout). Default 2 minutes.
	Timeout time.Duration
	// Git is the git binary. Default "git", looked up in PATH.
	Git string
	// CAFile, when set, is a PEM bundle of the certificate authorities https:// servers are
	// verified against, instead of the system's.
	CAFile string
}

// Cache is a local cache of bare clones (one per repository URL) and read-only trees (one per
// repository and commit). It is safe for concurrent use by goroutines and by several processes
// sharing Config.Dir.
type Cache struct {
	cfg   Config
	locks *locks

	fetches  atomic.Int64
	listings atomic.Int64
}

// Stats counts the network operations a Cache made.
type Stats struct {
	// Listings is the number of ref listings (git ls-remote): one per Resolve.
	Listings int64
	// Fetches is the number of fetches into a bare clone: only when a commit is missing.
	Fetches int64
}

// New returns a Cache over cfg.Dir, creating the directory layout if needed.
func New(cfg Config) (*Cache, error) {
	if cfg.Dir == "" {
		return nil, errors.New("gitsource: Config.Dir is required")
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 2 * time.Minute
	}
	if cfg.Git == "" {
		cfg.Git = "git"
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("gitsource: cache dir: %w", err)
	}
	cfg.Dir = dir
	for _, sub := range []string{"repos", "trees", "tmp", "home"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			return nil, fmt.Errorf("gitsource: create cache dir: %w", err)
		}
	}
	c := &Cache{cfg: cfg, locks: newLocks()}
	c.sweepTmp()
	return c, nil
}

// Stats returns the network operations made so far.
func (c *Cache) Stats() Stats {
	return Stats{Listings: c.listings.Load(), Fetches: c.fetches.Load()}
}

// repoKey names a repository's files in the cache: a hash of its URL, exactly as given.
func repoKey(repoURL string) string {
	sum := sha256.Sum256([]byte(repoURL))
	return hex.EncodeToString(sum[:16])
}

func (c *Cache) bareDir(key string) string  { return filepath.Join(c.cfg.Dir, "repos", key+".git") }
func (c *Cache) lockFile(key string) string { return filepath.Join(c.cfg.Dir, "repos", key+".lock") }
func (c *Cache) treesDir(key string) string { return filepath.Join(c.cfg.Dir, "trees", key) }
func (c *Cache) homeDir() string            { return filepath.Join(c.cfg.Dir, "home") }
func (c *Cache) tmpDir() string             { return filepath.Join(c.cfg.Dir, "tmp") }

// staleAfter is the age past which a leftover in tmp/ (credential files of a crashed process)
// is removed. No git command lives that long: Timeout is minutes.
const staleAfter = time.Hour

// sweepTmp removes leftovers of crashed processes from tmp/. Entries younger than staleAfter
// may belong to a live process sharing the directory, and are kept.
func (c *Cache) sweepTmp() {
	entries, err := os.ReadDir(c.tmpDir())
	if err != nil {
		return // nothing to sweep; the next command reports a broken cache dir
	}
	for _, e := range entries {
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > staleAfter {
			_ = os.RemoveAll(filepath.Join(c.tmpDir(), e.Name())) // best effort: a leftover costs only disk
		}
	}
}

// locks hands out one lock per repository key: an in-process mutex (a channel, so waiting
// honours the context) in front of an flock on the repository's lock file, which serialises
// the processes sharing the cache directory.
type locks struct {
	mu   sync.Mutex
	byID map[string]chan struct{}
}

func newLocks() *locks { return &locks{byID: map[string]chan struct{}{}} }

func (l *locks) get(key string) chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	ch, ok := l.byID[key]
	if !ok {
		ch = make(chan struct{}, 1)
		l.byID[key] = ch
	}
	return ch
}
