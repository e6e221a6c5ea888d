// Package config loads Horizon's one typed configuration from HORIZON_* environment variables.
//
// Load takes the lookup function instead of reading the process environment, so tests pass a
// map. It reports every missing or malformed variable in one error, so an operator fixes them in
// one go. Defaults live in Load and nowhere else; deploy/README.md lists every variable.
package config

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"horizon/shared/auth"
	"horizon/shared/notify"
	"horizon/shared/redisconn"
	"horizon/shared/secrets"
)

// Config is everything the API and the workers are configured with.
type Config struct {
	// DatabaseURL (HORIZON_DATABASE_URL, required): Postgres connection URL. Several hosts
	// (postgres://u@h1:5432,h2:5432/db) need target_session_attrs=read-write (or primary), so
	// that every connection goes to the primary whichever host that is now.
	DatabaseURL string
	// RedisURL (HORIZON_REDIS_URL, required): redis:// or rediss:// URL of one Redis, or
	// go-redis's failover URL naming Redis Sentinels:
	// redis://[sentinel-user:sentinel-password@]s1:26379?master_name=NAME&addr=s2:26379&addr=s3:26379[&username=U&password=P].
	RedisURL string
	// Redis is RedisURL parsed, once: every Redis client of the process is built from it.
	Redis redisconn.Options
	// Warnings say what Load accepted but an operator should know (e.g. fewer than three
	// sentinels); each main logs them once its logger exists.
	Warnings []string
	// Listen (HORIZON_LISTEN, default 127.0.0.1:8080): host:port the API serves on.
	Listen string
	// WorkersListen (HORIZON_WORKERS_LISTEN, default 127.0.0.1:8081): host:port a worker
	// process serves its /healthz and /readyz on, for its supervisor.
	WorkersListen string
	// SecretKey (HORIZON_SECRET_KEY, required): base64 of 32 bytes; encrypts secrets at rest.
	SecretKey []byte
	// BootstrapAdminToken (HORIZON_BOOTSTRAP_ADMIN_TOKEN, optional): when set, an admin user
	// with exactly this API token exists after start-up. Must look like a Horizon token.
	BootstrapAdminToken secrets.Value
	// CORSOrigins (HORIZON_CORS_ORIGINS, default none): comma-separated origins allowed to call
	// the API from a browser, e.g. https://horizon.example.org.
	CORSOrigins []string
	// LogFormat (HORIZON_LOG_FORMAT, default json): json or text.
	LogFormat string
	// LogLevel (HORIZON_LOG_LEVEL, default info): debug, info, warn or error.
	LogLevel string
	// RequestTimeout (HORIZON_REQUEST_TIMEOUT, default 30s): deadline of every API request's
	// context.
	RequestTimeout time.Duration
	// RateLimit and RateWindow (HORIZON_RATE_LIMIT, default 1200/1m): requests each API token
	// may make per window, counted in Redis so that every API replica shares the budget.
	RateLimit  int
	RateWindow time.Duration
	// Namespace (HORIZON_NAMESPACE, default horizon): prefix of every Redis key and Asynq queue
	// name, so several installations (or tests) can share one Redis.
	Namespace string
	// WorkerConcurrency (HORIZON_WORKER_CONCURRENCY, default 10): tasks one worker process runs
	// at once.
	WorkerConcurrency int
	// AuthCacheTTL (HORIZON_AUTH_CACHE_TTL, default 5s; 0 disables): how long an API replica
	// may reuse a token's authentication. Revocations evict at once on every replica through
	// Redis; the TTL bounds the staleness if that message is lost.
	AuthCacheTTL time.Duration
	// ReconcileInterval (HORIZON_RECONCILE_INTERVAL, default 30s): how often the workers'
	// scheduler enqueues the reconcile task.
	ReconcileInterval time.Duration
	// DriftInterval (HORIZON_DRIFT_INTERVAL, default 5m): how often every Proxmox server's
	// machines are compared with what Horizon set on them (workers/drift).
	DriftInterval time.Duration
	// DriftSweepIntervals (HORIZON_DRIFT_SWEEP_INTERVALS, default 1): every machine's config
	// is read at least once every this many drift intervals; 1 finds a change only a config
	// shows (a NIC, onboot, a cloud-init key) by the next check, more reads fewer configs.
	DriftSweepIntervals int
	// TerraformBin (HORIZON_TERRAFORM_BIN, default: terraform, else tofu, on PATH): the
	// Terraform-compatible binary the workers run.
	TerraformBin string
	// WorkDir (HORIZON_WORK_DIR, default the system's temporary directory): where workers make
	// one Terraform work dir per step attempt.
	WorkDir string
	// PluginCacheDir (HORIZON_PLUGIN_CACHE_DIR, default none): Terraform's provider cache,
	// shared by the work dirs of one host (init is serialised on it).
	PluginCacheDir string
	// StepHeartbeat (HORIZON_STEP_HEARTBEAT, default 10s): how often a running step proves it is
	// alive and looks for a cancel; the reconciler gives a step silent for six heartbeats a new
	// attempt.
	StepHeartbeat time.Duration
	// VMSSHPort (HORIZON_VM_SSH_PORT, default 22): the port of a machine's SSH server when its
	// module has no "ssh_port" output, for images whose sshd listens elsewhere (and the
	// unprivileged sandbox of `up`).
	VMSSHPort int
	// GitCacheDir (HORIZON_GIT_CACHE_DIR, default .data/git, relative to the working directory):
	// the local cache of git sources (bare clones and read-only trees, see shared/gitsource).
	// The API reads template sources through it when a template version is uploaded; processes
	// of one host may share it.
	GitCacheDir string
	// GitCAFile (HORIZON_GIT_CA_FILE, default none: the system's roots): a PEM bundle of the
	// certificate authorities https:// git servers are verified against.
	GitCAFile string
	// ISODownloadAttempts (HORIZON_ISO_DOWNLOAD_ATTEMPTS, default 3): how many times an ISO
	// build's image download is tried before its stage fails (a checksum mismatch is not
	// retried).
	ISODownloadAttempts int
	// ISORetryBackoff (HORIZON_ISO_RETRY_BACKOFF, default 10s): the first pause between two
	// download attempts, or two attempts of a Proxmox call that failed transiently (a lock, a
	// timeout); it doubles after each.
	ISORetryBackoff time.Duration
	// ProxmoxTaskPoll (HORIZON_PROXMOX_TASK_POLL, default 500ms): how often workers ask Proxmox
	// whether a task (UPID) they wait on has ended.
	ProxmoxTaskPoll time.Duration

	// LogMaxLen (HORIZON_LOG_MAXLEN, default 100000): the approximate length (XADD MAXLEN ~) at
	// which a run's Redis log stream is trimmed. Older lines are still served, from Postgres.
	LogMaxLen int64
	// LogRetention (HORIZON_LOG_RETENTION, default 168h): how long a run's Redis log stream
	// lives after the run ends. Postgres keeps every line until the stack is removed.
	LogRetention time.Duration
	// EventsMaxLen (HORIZON_EVENTS_MAXLEN, default 10000): the approximate length of the events
	// stream; a client resuming from an older id gets a reset event and reloads.
	EventsMaxLen int64
	// SSEHeartbeat (HORIZON_SSE_HEARTBEAT, default 15s): how often an idle event stream sends a
	// comment, so that proxies keep it open and a gone client is noticed.
	SSEHeartbeat time.Duration
	// SSEWriteTimeout (HORIZON_SSE_WRITE_TIMEOUT, default 1m): a streamed response (event
	// streams, log downloads) whose client accepts no bytes for this long is cut.
	SSEWriteTimeout time.Duration
	// SSEBuffer (HORIZON_SSE_BUFFER, default 1048576): bytes of events or log lines one event
	// stream may have waiting for a slow client; beyond it the client gets a lagging event and
	// resumes by id.
	SSEBuffer int
	// SSEMaxStreams (HORIZON_SSE_MAX_STREAMS, default 2000): event streams and log downloads one
	// API process serves at once; more are answered 503 with Retry-After.
	SSEMaxStreams int
	// SSEReaders (HORIZON_SSE_READERS, default 256): Redis connections one API process keeps for
	// reading streams: one per run whose log is being followed in that process, and one for the
	// events. More runs followed at once wait for a connection.
	SSEReaders int
	// StreamTokenTTL (HORIZON_STREAM_TOKEN_TTL, default 5m, at most 5m): how long a stream token
	// from POST /v1/stream-tokens may be used to open an event stream.
	StreamTokenTTL time.Duration

	// ConsoleURL (HORIZON_CONSOLE_URL, default none): the web console's base URL, for the links in
	// notifications; without it messages carry no link.
	ConsoleURL string
	// WebhookAllowCIDRs (HORIZON_WEBHOOK_ALLOW_CIDRS, default none): comma-separated ranges that
	// webhook destinations may reach although they are loopback, private, link-local or
	// metadata addresses (refused by default), e.g. an in-house chat server.
	WebhookAllowCIDRs []netip.Prefix
	// WebhookResolve is not read from the environment: nil is the system resolver; tests set
	// it to change what a destination's name resolves to.
	WebhookResolve func(ctx context.Context, host string) ([]netip.Addr, error)
	// WebhookTimeout (HORIZON_WEBHOOK_TIMEOUT, default 15s): one delivery attempt's bound.
	WebhookTimeout time.Duration
	// WebhookConcurrency (HORIZON_WEBHOOK_CONCURRENCY, default 20): deliveries one worker process
	// sends at once, in a pool of their own so that slow destinations never hold deploys up.
	WebhookConcurrency int
	// WebhookRetention (HORIZON_WEBHOOK_RETENTION, default 720h = 30 days): finished webhook
	// deliveries and their events older than this are deleted, except the newest
	// WebhookKeep (HORIZON_WEBHOOK_KEEP, default 100) deliveries of each subscription.
	WebhookRetention time.Duration
	WebhookKeep      int
	// WebhookLease (HORIZON_WEBHOOK_LEASE, default 2m): how long a delivery handed to the queue
	// waits for its attempt before the outbox's sweep hands it over again — what a delivery
	// whose worker died waits. Longer than WebhookTimeout, so that a slow attempt in progress is
	// not sent twice.
	WebhookLease time.Duration
}

// Load reads the configuration through lookup (os.LookupEnv in production).
func Load(lookup func(string) (string, bool)) (Config, error) {
	l := loader{lookup: lookup}
	c := Config{
		DatabaseURL:         l.required("HORIZON_DATABASE_URL"),
		RedisURL:            l.required("HORIZON_REDIS_URL"),
		Listen:              l.str("HORIZON_LISTEN", "127.0.0.1:8080"),
		WorkersListen:       l.str("HORIZON_WORKERS_LISTEN", "127.0.0.1:8081"),
		LogFormat:           l.oneOf("HORIZON_LOG_FORMAT", "json", "json", "text"),
		LogLevel:            l.oneOf("HORIZON_LOG_LEVEL", "info", "debug", "info", "warn", "error"),
		RequestTimeout:      l.duration("HORIZON_REQUEST_TIMEOUT", 30*time.Second),
		Namespace:           l.str("HORIZON_NAMESPACE", "horizon"),
		WorkerConcurrency:   l.positiveInt("HORIZON_WORKER_CONCURRENCY", 10),
		ReconcileInterval:   l.duration("HORIZON_RECONCILE_INTERVAL", 30*time.Second),
		DriftInterval:       l.duration("HORIZON_DRIFT_INTERVAL", 5*time.Minute),
		DriftSweepIntervals: l.positiveInt("HORIZON_DRIFT_SWEEP_INTERVALS", 1),
		AuthCacheTTL:        l.durationOrZero("HORIZON_AUTH_CACHE_TTL", 5*time.Second),
		GitCacheDir:         l.str("HORIZON_GIT_CACHE_DIR", filepath.Join(".data", "git")),
		TerraformBin:        l.str("HORIZON_TERRAFORM_BIN", ""),
		WorkDir:             l.str("HORIZON_WORK_DIR", ""),
		PluginCacheDir:      l.str("HORIZON_PLUGIN_CACHE_DIR", ""),
		StepHeartbeat:       l.duration("HORIZON_STEP_HEARTBEAT", 10*time.Second),
		VMSSHPort:           l.positiveInt("HORIZON_VM_SSH_PORT", 22),
		GitCAFile:           l.str("HORIZON_GIT_CA_FILE", ""),

		ISODownloadAttempts: l.positiveInt("HORIZON_ISO_DOWNLOAD_ATTEMPTS", 3),
		ISORetryBackoff:     l.duration("HORIZON_ISO_RETRY_BACKOFF", 10*time.Second),
		ProxmoxTaskPoll:     l.duration("HORIZON_PROXMOX_TASK_POLL", 500*time.Millisecond),
		LogMaxLen:           int64(l.positiveInt("HORIZON_LOG_MAXLEN", 100_000)),
		LogRetention:        l.duration("HORIZON_LOG_RETENTION", 7*24*time.Hour),
		EventsMaxLen:        int64(l.positiveInt("HORIZON_EVENTS_MAXLEN", 10_000)),
		SSEHeartbeat:        l.duration("HORIZON_SSE_HEARTBEAT", 15*time.Second),
		SSEWriteTimeout:     l.duration("HORIZON_SSE_WRITE_TIMEOUT", time.Minute),
		SSEBuffer:           l.positiveInt("HORIZON_SSE_BUFFER", 1<<20),
		SSEMaxStreams:       l.positiveInt("HORIZON_SSE_MAX_STREAMS", 2000),
		SSEReaders:          l.positiveInt("HORIZON_SSE_READERS", 256),
		StreamTokenTTL:      l.duration("HORIZON_STREAM_TOKEN_TTL", 5*time.Minute),
		ConsoleURL:          strings.TrimSuffix(l.str("HORIZON_CONSOLE_URL", ""), "/"),
		WebhookTimeout:      l.duration("HORIZON_WEBHOOK_TIMEOUT", 15*time.Second),
		WebhookConcurrency:  l.positiveInt("HORIZON_WEBHOOK_CONCURRENCY", 20),
		WebhookRetention:    l.duration("HORIZON_WEBHOOK_RETENTION", 30*24*time.Hour),
		WebhookKeep:         l.positiveInt("HORIZON_WEBHOOK_KEEP", 100),
		WebhookLease:        l.duration("HORIZON_WEBHOOK_LEASE", 2*time.Minute),
	}
	if c.DatabaseURL != "" {
		u, err := url.Parse(c.DatabaseURL)
		switch {
		case err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql"):
			l.fail("HORIZON_DATABASE_URL", "must be a postgres:// URL")
		case strings.Contains(u.Host, ","):
			// With several hosts and no target_session_attrs, pgx takes the first that answers,
			// which after a failover may be a standby: every write would fail.
			if a := u.Query().Get("target_session_attrs"); a != "read-write" && a != "primary" {
				l.fail("HORIZON_DATABASE_URL", "names several hosts but not target_session_attrs=read-write: "+
					"a connection could land on a standby after a failover; add target_session_attrs=read-write")
			}
		}
	}
	if c.RedisURL != "" {
		opts, warnings, err := redisconn.Parse(c.RedisURL)
		if err != nil {
			l.fail("HORIZON_REDIS_URL", "%v", err)
		}
		c.Redis, c.Warnings = opts, append(c.Warnings, warnings...)
	}
	if _, port, err := net.SplitHostPort(c.Listen); err != nil || port == "" {
		l.fail("HORIZON_LISTEN", "must be host:port, e.g. 127.0.0.1:8080")
	}
	if v := l.required("HORIZON_SECRET_KEY"); v != "" {
		key, err := secrets.ParseKey(v)
		if err != nil {
			l.fail("HORIZON_SECRET_KEY", "must be the base64 of 32 random bytes (%v); generate one with: openssl rand -base64 32", err)
		}
		c.SecretKey = key
	}
	if v, ok := lookup("HORIZON_BOOTSTRAP_ADMIN_TOKEN"); ok && v != "" {
		if !auth.WellFormed(v) {
			l.fail("HORIZON_BOOTSTRAP_ADMIN_TOKEN", "must look like a Horizon token: %s followed by 43 base64url characters", auth.TokenPrefix)
		}
		c.BootstrapAdminToken = secrets.Value(v)
	}
	if v, ok := lookup("HORIZON_CORS_ORIGINS"); ok && strings.TrimSpace(v) != "" {
		for _, o := range strings.Split(v, ",") {
			o = strings.TrimSpace(o)
			u, err := url.Parse(o)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
				l.fail("HORIZON_CORS_ORIGINS", "%q is not an origin like https://horizon.example.org", o)
				continue
			}
			c.CORSOrigins = append(c.CORSOrigins, strings.TrimSuffix(o, "/"))
		}
	}
	if v, ok := lookup("HORIZON_WEBHOOK_ALLOW_CIDRS"); ok {
		ps, err := notify.ParseCIDRs(v)
		if err != nil {
			l.fail("HORIZON_WEBHOOK_ALLOW_CIDRS", "%v", err)
		}
		c.WebhookAllowCIDRs = ps
	}
	if c.ConsoleURL != "" {
		if u, err := url.Parse(c.ConsoleURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			l.fail("HORIZON_CONSOLE_URL", "must be an http(s) URL")
		}
	}
	if c.WebhookLease <= c.WebhookTimeout {
		l.fail("HORIZON_WEBHOOK_LEASE", "must be longer than HORIZON_WEBHOOK_TIMEOUT (%s): an attempt still running when its lease ends is sent again", c.WebhookTimeout)
	}
	if c.StreamTokenTTL > 5*time.Minute {
		l.fail("HORIZON_STREAM_TOKEN_TTL", "must be at most 5m: a stream token travels in a URL")
	}
	if c.SSEBuffer < 64<<10 {
		l.fail("HORIZON_SSE_BUFFER", "must be at least 65536 bytes")
	}
	c.RateLimit, c.RateWindow = l.rate("HORIZON_RATE_LIMIT", 1200, time.Minute)
	if !validNamespace(c.Namespace) {
		l.fail("HORIZON_NAMESPACE", "must be 1-32 characters of a-z, 0-9 and -")
	}
	return c, l.err()
}

type loader struct {
	lookup   func(string) (string, bool)
	problems []string
}

func (l *loader) fail(name, format string, args ...any) {
	l.problems = append(l.problems, name+": "+fmt.Sprintf(format, args...))
}

func (l *loader) err() error {
	if len(l.problems) == 0 {
		return nil
	}
	return errors.New("configuration: " + strings.Join(l.problems, "; "))
}

func (l *loader) required(name string) string {
	v, ok := l.lookup(name)
	if !ok || strings.TrimSpace(v) == "" {
		l.fail(name, "is required")
		return ""
	}
	return strings.TrimSpace(v)
}

func (l *loader) str(name, def string) string {
	if v, ok := l.lookup(name); ok && strings.TrimSpace(v) != "" {
		return strings.TrimSpace(v)
	}
	return def
}

func (l *loader) oneOf(name, def string, allowed ...string) string {
	v := strings.ToLower(l.str(name, def))
	for _, a := range allowed {
		if v == a {
			return v
		}
	}
	l.fail(name, "must be one of %s", strings.Join(allowed, ", "))
	return def
}

func (l *loader) duration(name string, def time.Duration) time.Duration {
	v, ok := l.lookup(name)
	if !ok || strings.TrimSpace(v) == "" {
		return def
	}
	d, err := time.ParseDuration(strings.TrimSpace(v))
	if err != nil || d <= 0 {
		l.fail(name, "must be a positive duration like 30s or 2m")
		return def
	}
	return d
}

func (l *loader) durationOrZero(name string, def time.Duration) time.Duration {
	if v, ok := l.lookup(name); ok && strings.TrimSpace(v) == "0" {
		return 0
	}
	return l.duration(name, def)
}

func (l *loader) positiveInt(name string, def int) int {
	v, ok := l.lookup(name)
	if !ok || strings.TrimSpace(v) == "" {
		return def
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n <= 0 {
		l.fail(name, "must be a positive integer")
		return def
	}
	return n
}

// rate parses "N/duration", e.g. 1200/1m.
func (l *loader) rate(name string, defN int, defWindow time.Duration) (int, time.Duration) {
	v, ok := l.lookup(name)
	if !ok || strings.TrimSpace(v) == "" {
		return defN, defWindow
	}
	n, w, found := strings.Cut(strings.TrimSpace(v), "/")
	count, err1 := strconv.Atoi(n)
	window, err2 := time.ParseDuration(w)
	if !found || err1 != nil || err2 != nil || count <= 0 || window < time.Second {
		l.fail(name, "must be requests/window, e.g. 1200/1m (window at least 1s)")
		return defN, defWindow
	}
	return count, window
}

func validNamespace(s string) bool {
	if len(s) == 0 || len(s) > 32 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}

// Logger builds the process logger the configuration asks for: JSON (production) or text
// (local), at LogLevel.
func (c Config) Logger(w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(c.LogLevel)) // Load only accepts valid levels
	opts := &slog.HandlerOptions{Level: level}
	if c.LogFormat == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}
