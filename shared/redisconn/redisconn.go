// Package redisconn turns HORIZON_REDIS_URL into the go-redis clients of a process.
//
// Decisions:
//   - Two forms. A plain redis:// or rediss:// URL is one Redis (go-redis's ParseURL). A URL
//     with master_name= or addr= is go-redis's failover form (ParseFailoverURL): the host and
//     every addr= are Redis Sentinels, the URL's user and password are the sentinels'
//     credentials, username= and password= the master's; go-redis's other options ride as query
//     parameters. Asynq's own redis-sentinel:// form is refused: it cannot carry the
//     sentinels' credentials, and one parser for the whole process is the point.
//   - The URL is parsed once, by config.Load, and each process builds its client from these
//     Options and hands that one client to everything: Asynq (its *FromRedisClient
//     constructors), the streams, the auth cache, the gate and the namespace claim. A failover
//     client follows the sentinels' +switch-master itself, so every user of it moves to the new
//     master at once; two clients built from two parses could not be trusted to agree. The API
//     builds a second client from the same Options only to give its blocking stream readers a
//     pool of their own.
//   - ContextTimeoutEnabled is on: a command's socket deadlines follow its context, so an API
//     request never waits on Redis past its request timeout, whatever go-redis retries.
package redisconn

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Options is a parsed HORIZON_REDIS_URL; the zero value is not usable.
type Options struct {
	single   *redis.Options
	failover *redis.FailoverOptions
}

// Parse parses url. It returns the options, warnings that say what a failover will not do with
// this URL (fewer than three sentinels), and an error that names what is wrong.
func Parse(rawURL string) (Options, []string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return Options{}, nil, errors.New("is not a URL")
	}
	switch u.Scheme {
	case "redis", "rediss":
	case "redis-sentinel":
		return Options{}, nil, errors.New("the redis-sentinel:// form is not supported; name the sentinels as " +
			"redis://[sentinel-user:sentinel-password@]sentinel1:26379?master_name=NAME&addr=sentinel2:26379&addr=sentinel3:26379[&username=U&password=P]")
	default:
		return Options{}, nil, errors.New("must be a redis:// or rediss:// URL")
	}
	q := u.Query()
	if !q.Has("master_name") && !q.Has("addr") {
		o, err := redis.ParseURL(rawURL)
		if err != nil {
			return Options{}, nil, fmt.Errorf("%s", strings.TrimPrefix(err.Error(), "redis: "))
		}
		o.ContextTimeoutEnabled = true
		return Options{single: o}, nil, nil
	}
	if strings.TrimSpace(q.Get("master_name")) == "" {
		return Options{}, nil, errors.New("names Redis Sentinels (addr=) but no master_name=: add master_name=<the name the sentinels monitor>")
	}
	fo, err := redis.ParseFailoverURL(rawURL)
	if err != nil {
		return Options{}, nil, fmt.Errorf("%s", strings.TrimPrefix(err.Error(), "redis: "))
	}
	fo.ContextTimeoutEnabled = true
	var warnings []string
	if n := distinct(fo.SentinelAddrs); n < 3 {
		warnings = append(warnings, fmt.Sprintf("HORIZON_REDIS_URL names %d sentinel(s): with fewer than three there is no quorum of two "+
			"that survives the loss of one, and a process that starts while the sentinels it names are down cannot find the master", n))
	}
	return Options{failover: fo}, warnings, nil
}

func distinct(addrs []string) int {
	seen := map[string]bool{}
	for _, a := range addrs {
		seen[a] = true
	}
	return len(seen)
}

// Sentinel says whether the URL names Redis Sentinels.
func (o Options) Sentinel() bool { return o.failover != nil }

// NewClient builds a client; poolSize 0 keeps go-redis's default. A failover client asks the
// sentinels for the master on every new connection and drops its connections to the old
// master when the sentinels announce a switch. It panics on the zero Options (a programming
// error: the Options come from config.Load).
func (o Options) NewClient(poolSize int) *redis.Client {
	switch {
	case o.failover != nil:
		fo := *o.failover
		if poolSize > 0 {
			fo.PoolSize = poolSize
		}
		return redis.NewFailoverClient(&fo)
	case o.single != nil:
		so := *o.single
		if poolSize > 0 {
			so.PoolSize = poolSize
		}
		return redis.NewClient(&so)
	}
	panic("redisconn: NewClient on options that were not parsed")
}
