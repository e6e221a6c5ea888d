package store_test

import (
	"context"
	"strings"
	"testing"

	"horizon/shared/store"
	"horizon/shared/testkit"
)

// TestPoolSize: a process's default pool size applies unless the URL (an operator's
// pool_max_conns) or the caller's MaxConns says otherwise.
func TestPoolSize(t *testing.T) {
	t.Parallel()
	url := testkit.DatabaseURL()
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	for _, c := range []struct {
		name string
		cfg  store.Config
		want int32
	}{
		{"the process's default", store.Config{URL: url, DefaultMaxConns: 23}, 23},
		{"the URL's pool_max_conns", store.Config{URL: url + sep + "pool_max_conns=3", DefaultMaxConns: 23}, 3},
		{"the caller's MaxConns", store.Config{URL: url + sep + "pool_max_conns=3", MaxConns: 5, DefaultMaxConns: 23}, 5},
	} {
		pool, err := store.Open(context.Background(), c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got := pool.Config().MaxConns; got != c.want {
			t.Errorf("%s: pool of %d, want %d", c.name, got, c.want)
		}
		pool.Close()
	}
}
