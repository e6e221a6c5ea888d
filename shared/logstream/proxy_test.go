package logstream_test

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"horizon/shared/testkit"
)

// proxy is a TCP proxy to Redis that a test can cut, to make Redis unreachable for one client
// without touching the Redis other tests use.
type proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]struct{}
}

func newProxy(t testing.TB, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	go p.serve()
	t.Cleanup(func() {
		_ = ln.Close() // stops serve
		p.Cut()
	})
	return p
}

func (p *proxy) Addr() string { return p.ln.Addr().String() }

// Cut closes every open connection and refuses new ones until Restore.
func (p *proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		_ = c.Close() // cutting is the point
	}
	clear(p.conns)
}

// Restore lets connections through again.
func (p *proxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
}

func (p *proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			_ = c.Close() // refused
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			_ = c.Close() // nothing to proxy to
			continue
		}
		p.conns[c], p.conns[up] = struct{}{}, struct{}{}
		p.mu.Unlock()
		go pipe(c, up)
		go pipe(up, c)
	}
}

func pipe(dst, src net.Conn) {
	_, _ = io.Copy(dst, src) // ends when either side closes
	_ = dst.Close()
	_ = src.Close()
}

// redisVia returns a client that reaches Redis through p and does not retry.
func redisVia(t testing.TB, p *proxy) *redis.Client {
	t.Helper()
	// The test Redis's own settings (database, credentials), only reached through the proxy.
	opts, err := redis.ParseURL(testkit.RedisURL())
	if err != nil {
		t.Fatal(err)
	}
	opts.Addr, opts.MaxRetries, opts.DialTimeout = p.Addr(), -1, time.Second
	c := redis.NewClient(opts)
	t.Cleanup(func() { _ = c.Close() }) // nothing to flush
	return c
}
