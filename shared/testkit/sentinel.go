package testkit

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// SentinelDownAfter is the sentinels' down-after-milliseconds in RedisSentinel: the setting
// deploy/README.md documents for production, so that the failover tests measure it.
const SentinelDownAfter = 5 * time.Second

// SentinelSet is a Redis master, two replicas and three Redis Sentinels (quorum 2) monitoring
// them as "hz", all real processes on loopback ports of their own, stopped when the test ends.
// Every Redis has min-replicas-to-write 1, as deploy/README.md recommends, so two replicas:
// with one, the promoted replica would refuse every write (NOREPLICAS) until the old master
// came back.
type SentinelSet struct {
	t     testing.TB
	dir   string
	bin   string
	ports [3]int // the first master's and the replicas'
	procs map[int]*exec.Cmd
	// Sentinels are the sentinels' addresses.
	Sentinels []string
}

// redisBinary finds a Redis binary or fails the test saying what to install: a failover test
// that cannot run must not pass silently.
func redisBinary(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is not installed (%v): the failover tests run real Redis Sentinels; apt-get install redis-server redis-sentinel", name, err)
	}
	return p
}

// RedisSentinel starts the set and waits until the sentinels know the replica and each other,
// so that a failover can happen.
func RedisSentinel(t testing.TB) *SentinelSet {
	t.Helper()
	s := &SentinelSet{t: t, dir: t.TempDir(), bin: redisBinary(t, "redis-server"), procs: map[int]*exec.Cmd{}}
	redisBinary(t, "redis-sentinel") // Debian's package; the sentinels run from redis-server --sentinel
	s.ports = [3]int{FreePort(t), FreePort(t), FreePort(t)}
	s.startRedis(s.ports[0], 0)
	s.startRedis(s.ports[1], s.ports[0])
	s.startRedis(s.ports[2], s.ports[0])
	for i := range 3 {
		port := FreePort(t)
		conf := filepath.Join(s.dir, fmt.Sprintf("sentinel%d.conf", i))
		// Sentinel rewrites its file, so each test writes its own.
		body := fmt.Sprintf("port %d\nbind 127.0.0.1\ndaemonize no\ndir %s\nsentinel monitor hz 127.0.0.1 %d 2\n"+
			"sentinel down-after-milliseconds hz %d\nsentinel failover-timeout hz 60000\nsentinel parallel-syncs hz 1\n",
			port, s.dir, s.ports[0], SentinelDownAfter.Milliseconds())
		if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		s.start(port, conf, "--sentinel")
		s.Sentinels = append(s.Sentinels, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	}
	Eventually(t, 30*time.Second, "the sentinels did not discover the replica and each other", func() bool {
		for _, addr := range s.Sentinels {
			c := redis.NewSentinelClient(&redis.Options{Addr: addr})
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			replicas, err1 := c.Replicas(ctx, "hz").Result()
			sentinels, err2 := c.Sentinels(ctx, "hz").Result()
			cancel()
			_ = c.Close() // a probe
			if err1 != nil || err2 != nil || len(replicas) < 2 || len(sentinels) < 2 {
				return false
			}
		}
		return true
	})
	// min-replicas-to-write: the master takes writes once its replica has acknowledged.
	Eventually(t, 30*time.Second, "the master did not take writes", func() bool {
		c := redis.NewClient(&redis.Options{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(s.ports[0]))})
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		return c.Set(ctx, "testkit:sentinel:ready", "1", time.Minute).Err() == nil
	})
	return s
}

// URL is the HORIZON_REDIS_URL of the set: go-redis's failover form naming the three sentinels.
func (s *SentinelSet) URL() string {
	return fmt.Sprintf("redis://%s/0?master_name=hz&addr=%s&addr=%s", s.Sentinels[0], s.Sentinels[1], s.Sentinels[2])
}

// Master returns the address the sentinels name as the master now.
func (s *SentinelSet) Master() string {
	s.t.Helper()
	c := redis.NewSentinelClient(&redis.Options{Addr: s.Sentinels[0]})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	addr, err := c.GetMasterAddrByName(ctx, "hz").Result()
	if err != nil {
		s.t.Fatalf("ask a sentinel for the master: %v", err)
	}
	return net.JoinHostPort(addr[0], addr[1])
}

// KillMaster SIGKILLs the current master's process and returns its port.
func (s *SentinelSet) KillMaster() int {
	s.t.Helper()
	_, p, _ := net.SplitHostPort(s.Master())
	port, _ := strconv.Atoi(p)
	cmd := s.procs[port]
	if cmd == nil {
		s.t.Fatalf("no process of this set listens on the master's port %d", port)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	delete(s.procs, port)
	return port
}

// Role is the role ("master", "slave") the Redis on port reports, or "" when it does not answer.
func (s *SentinelSet) Role(port int) string {
	c := redis.NewClient(&redis.Options{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	role, err := c.Do(ctx, "ROLE").Slice()
	if err != nil || len(role) == 0 {
		return ""
	}
	r, _ := role[0].(string)
	return r
}

// Restart starts again the Redis that listened on port, with its data directory, as a master
// configuration would; the sentinels turn it into a replica of the new master.
func (s *SentinelSet) Restart(port int) {
	s.t.Helper()
	s.startRedis(port, 0)
}

func (s *SentinelSet) startRedis(port, replicaOf int) {
	s.t.Helper()
	dir := filepath.Join(s.dir, strconv.Itoa(port))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		s.t.Fatal(err)
	}
	args := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "", "--appendonly", "yes",
		"--min-replicas-to-write", "1", "--min-replicas-max-lag", "10", "--daemonize", "no"}
	if replicaOf != 0 {
		args = append(args, "--replicaof", "127.0.0.1", strconv.Itoa(replicaOf))
	}
	s.start(port, args...)
}

func (s *SentinelSet) start(port int, args ...string) {
	s.t.Helper()
	cmd := exec.Command(s.bin, args...)
	logf, err := os.Create(filepath.Join(s.dir, fmt.Sprintf("redis-%d.log", port)))
	if err != nil {
		s.t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("start %s: %v", s.bin, err)
	}
	s.procs[port] = cmd
	s.t.Cleanup(func() {
		if c := s.procs[port]; c == cmd {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		_ = logf.Close()
	})
	Eventually(s.t, 10*time.Second, fmt.Sprintf("redis on port %d did not answer", port), func() bool {
		c := redis.NewClient(&redis.Options{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))})
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		return c.Ping(ctx).Err() == nil
	})
}

// FreePort returns a TCP port free on 127.0.0.1 now, for a server a test starts.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
