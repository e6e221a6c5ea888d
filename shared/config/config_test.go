package config_test

import (
	"strings"
	"testing"
	"time"

	"horizon/shared/auth"
	"horizon/shared/config"
)

func lookup(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

const key = "AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE="

func TestLoadDefaults(t *testing.T) {
	t.Parallel()
	c, err := config.Load(lookup(map[string]string{
		"HORIZON_DATABASE_URL": "postgres://h@db/horizon", "HORIZON_REDIS_URL": "redis://cache:6379/0", "HORIZON_SECRET_KEY": key,
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen != "127.0.0.1:8080" || c.LogFormat != "json" || c.LogLevel != "info" || c.RequestTimeout != 30*time.Second ||
		c.RateLimit != 1200 || c.RateWindow != time.Minute || c.Namespace != "horizon" || len(c.SecretKey) != 32 ||
		c.GitCacheDir != ".data/git" || c.GitCAFile != "" || c.DriftSweepIntervals != 1 || c.WebhookLease != 2*time.Minute {
		t.Fatalf("defaults: %+v", c)
	}
}

// TestLoadWebhookLease: the lease of a queued delivery is settable, and refused when an attempt
// could outlive it (it would be sent twice) or when it is not a duration.
func TestLoadWebhookLease(t *testing.T) {
	t.Parallel()
	env := func(kv ...string) map[string]string {
		m := map[string]string{"HORIZON_DATABASE_URL": "postgres://h@db/horizon", "HORIZON_REDIS_URL": "redis://cache:6379/0", "HORIZON_SECRET_KEY": key}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	c, err := config.Load(lookup(env("HORIZON_WEBHOOK_LEASE", "5s", "HORIZON_WEBHOOK_TIMEOUT", "2s")))
	if err != nil || c.WebhookLease != 5*time.Second {
		t.Fatalf("lease 5s: %v %v", c.WebhookLease, err)
	}
	for _, bad := range []map[string]string{env("HORIZON_WEBHOOK_LEASE", "10s"), env("HORIZON_WEBHOOK_LEASE", "3s", "HORIZON_WEBHOOK_TIMEOUT", "3s"),
		env("HORIZON_WEBHOOK_LEASE", "soon"), env("HORIZON_WEBHOOK_LEASE", "-1m")} {
		if _, err := config.Load(lookup(bad)); err == nil || !strings.Contains(err.Error(), "HORIZON_WEBHOOK_LEASE") {
			t.Errorf("%v: the error does not name HORIZON_WEBHOOK_LEASE: %v", bad, err)
		}
	}
}

func TestLoadReportsEveryProblemAtOnce(t *testing.T) {
	t.Parallel()
	_, err := config.Load(lookup(map[string]string{
		"HORIZON_REDIS_URL":             "http://cache",
		"HORIZON_SECRET_KEY":            "c2hvcnQ=",
		"HORIZON_LISTEN":                "8080",
		"HORIZON_LOG_FORMAT":            "xml",
		"HORIZON_BOOTSTRAP_ADMIN_TOKEN": "letmein",
		"HORIZON_CORS_ORIGINS":          "https://ok.example.org,ftp://bad",
		"HORIZON_RATE_LIMIT":            "lots",
		"HORIZON_REQUEST_TIMEOUT":       "-1s",
		"HORIZON_DRIFT_SWEEP_INTERVALS": "0",
	}))
	if err == nil {
		t.Fatal("no error")
	}
	for _, name := range []string{"HORIZON_DATABASE_URL", "HORIZON_REDIS_URL", "HORIZON_SECRET_KEY", "HORIZON_LISTEN", "HORIZON_LOG_FORMAT",
		"HORIZON_BOOTSTRAP_ADMIN_TOKEN", "HORIZON_CORS_ORIGINS", "HORIZON_RATE_LIMIT", "HORIZON_REQUEST_TIMEOUT", "HORIZON_DRIFT_SWEEP_INTERVALS"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("the error does not mention %s: %v", name, err)
		}
	}
	if strings.Contains(err.Error(), "letmein") {
		t.Error("the error echoes the bootstrap token")
	}
}

func TestLoadBootstrapToken(t *testing.T) {
	t.Parallel()
	tok := auth.NewToken().Reveal()
	c, err := config.Load(lookup(map[string]string{
		"HORIZON_DATABASE_URL": "postgres://h@db/horizon", "HORIZON_REDIS_URL": "redis://cache:6379/0", "HORIZON_SECRET_KEY": key,
		"HORIZON_BOOTSTRAP_ADMIN_TOKEN": tok, "HORIZON_CORS_ORIGINS": "https://ui.example.org/",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.BootstrapAdminToken.Reveal() != tok || len(c.CORSOrigins) != 1 || c.CORSOrigins[0] != "https://ui.example.org" {
		t.Fatalf("%+v", c)
	}
}

func TestLoadGitCacheDir(t *testing.T) {
	t.Parallel()
	c, err := config.Load(lookup(map[string]string{
		"HORIZON_DATABASE_URL": "postgres://h@db/horizon", "HORIZON_REDIS_URL": "redis://cache:6379/0", "HORIZON_SECRET_KEY": key,
		"HORIZON_GIT_CACHE_DIR": " /var/cache/horizon/git ", "HORIZON_GIT_CA_FILE": "/etc/horizon/git-ca.pem",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.GitCacheDir != "/var/cache/horizon/git" || c.GitCAFile != "/etc/horizon/git-ca.pem" {
		t.Fatalf("GitCacheDir = %q, GitCAFile = %q; want the values set", c.GitCacheDir, c.GitCAFile)
	}
}

func TestLoadLiveTracking(t *testing.T) {
	t.Parallel()
	base := map[string]string{"HORIZON_DATABASE_URL": "postgres://h@db/horizon", "HORIZON_REDIS_URL": "redis://cache:6379/0", "HORIZON_SECRET_KEY": key}
	c, err := config.Load(lookup(base))
	if err != nil {
		t.Fatal(err)
	}
	if c.LogMaxLen != 100_000 || c.LogRetention != 7*24*time.Hour || c.EventsMaxLen != 10_000 || c.SSEHeartbeat != 15*time.Second ||
		c.SSEWriteTimeout != time.Minute || c.SSEBuffer != 1<<20 || c.SSEMaxStreams != 2000 || c.SSEReaders != 256 || c.StreamTokenTTL != 5*time.Minute {
		t.Fatalf("defaults: %+v", c)
	}
	set := map[string]string{"HORIZON_LOG_MAXLEN": "5000", "HORIZON_LOG_RETENTION": "24h", "HORIZON_EVENTS_MAXLEN": "500",
		"HORIZON_SSE_HEARTBEAT": "5s", "HORIZON_SSE_WRITE_TIMEOUT": "30s", "HORIZON_SSE_BUFFER": "262144", "HORIZON_SSE_MAX_STREAMS": "10",
		"HORIZON_SSE_READERS": "32", "HORIZON_STREAM_TOKEN_TTL": "90s"}
	for k, v := range base {
		set[k] = v
	}
	c, err = config.Load(lookup(set))
	if err != nil {
		t.Fatal(err)
	}
	if c.LogMaxLen != 5000 || c.LogRetention != 24*time.Hour || c.EventsMaxLen != 500 || c.SSEHeartbeat != 5*time.Second ||
		c.SSEWriteTimeout != 30*time.Second || c.SSEBuffer != 262144 || c.SSEMaxStreams != 10 || c.SSEReaders != 32 || c.StreamTokenTTL != 90*time.Second {
		t.Fatalf("set: %+v", c)
	}
	bad := map[string]string{"HORIZON_STREAM_TOKEN_TTL": "10m", "HORIZON_SSE_BUFFER": "100", "HORIZON_LOG_MAXLEN": "0", "HORIZON_LOG_RETENTION": "soon"}
	for k, v := range base {
		bad[k] = v
	}
	_, err = config.Load(lookup(bad))
	for _, name := range []string{"HORIZON_STREAM_TOKEN_TTL", "HORIZON_SSE_BUFFER", "HORIZON_LOG_MAXLEN", "HORIZON_LOG_RETENTION"} {
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("the error does not mention %s: %v", name, err)
		}
	}
}

func TestLoadISOSettings(t *testing.T) {
	t.Parallel()
	base := map[string]string{"HORIZON_DATABASE_URL": "postgres://h@db/horizon", "HORIZON_REDIS_URL": "redis://cache:6379/0", "HORIZON_SECRET_KEY": key}
	c, err := config.Load(lookup(base))
	if err != nil {
		t.Fatal(err)
	}
	if c.ISODownloadAttempts != 3 || c.ISORetryBackoff != 10*time.Second || c.ProxmoxTaskPoll != 500*time.Millisecond {
		t.Fatalf("defaults: attempts %d, backoff %s, poll %s", c.ISODownloadAttempts, c.ISORetryBackoff, c.ProxmoxTaskPoll)
	}
	base["HORIZON_ISO_DOWNLOAD_ATTEMPTS"], base["HORIZON_ISO_RETRY_BACKOFF"], base["HORIZON_PROXMOX_TASK_POLL"] = "5", "2s", "100ms"
	if c, err = config.Load(lookup(base)); err != nil || c.ISODownloadAttempts != 5 || c.ISORetryBackoff != 2*time.Second || c.ProxmoxTaskPoll != 100*time.Millisecond {
		t.Fatalf("set: %v %+v", err, c)
	}
	base["HORIZON_ISO_DOWNLOAD_ATTEMPTS"], base["HORIZON_ISO_RETRY_BACKOFF"] = "0", "soon"
	_, err = config.Load(lookup(base))
	if err == nil || !strings.Contains(err.Error(), "HORIZON_ISO_DOWNLOAD_ATTEMPTS") || !strings.Contains(err.Error(), "HORIZON_ISO_RETRY_BACKOFF") {
		t.Fatalf("bad values: %v", err)
	}
}

// TestLoadHighAvailabilityURLs: the Sentinel form of HORIZON_REDIS_URL and a multi-host
// HORIZON_DATABASE_URL are accepted when complete, refused naming the setting when a failover
// could not work, and accepted with a warning when it would work without a quorum.
func TestLoadHighAvailabilityURLs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, db, redis string
		sentinel        bool
		wantErr         string // a fragment of the error; "" for none
		wantWarning     string // a fragment of the warning; "" for none
	}{
		{name: "one redis", db: "postgres://h@db/horizon", redis: "redis://cache:6379/2"},
		{name: "three sentinels", db: "postgres://h@db/horizon", sentinel: true,
			redis: "redis://suser:spass@s1:26379/0?master_name=hz&addr=s2:26379&addr=s3:26379&username=u&password=p"},
		{name: "sentinels without master_name", db: "postgres://h@db/horizon", redis: "redis://s1:26379?addr=s2:26379&addr=s3:26379",
			wantErr: "HORIZON_REDIS_URL: names Redis Sentinels (addr=) but no master_name="},
		{name: "empty master_name", db: "postgres://h@db/horizon", redis: "redis://s1:26379?master_name=&addr=s2:26379",
			wantErr: "HORIZON_REDIS_URL: names Redis Sentinels (addr=) but no master_name="},
		{name: "one sentinel", db: "postgres://h@db/horizon", redis: "redis://s1:26379?master_name=hz", sentinel: true,
			wantWarning: "HORIZON_REDIS_URL names 1 sentinel(s)"},
		{name: "asynq's sentinel form", db: "postgres://h@db/horizon", redis: "redis-sentinel://s1:26379,s2:26379?master=hz",
			wantErr: "HORIZON_REDIS_URL: the redis-sentinel:// form is not supported"},
		{name: "unknown option", db: "postgres://h@db/horizon", redis: "redis://s1:26379?master_name=hz&addr=s2:26379&addr=s3:26379&colour=red",
			wantErr: "HORIZON_REDIS_URL: "},
		{name: "two postgres hosts, read-write", redis: "redis://cache",
			db: "postgres://h@db1:5432,db2:5432/horizon?target_session_attrs=read-write"},
		{name: "two postgres hosts, primary", redis: "redis://cache",
			db: "postgres://h@db1:5432,db2:5432/horizon?target_session_attrs=primary"},
		{name: "two postgres hosts, no target_session_attrs", redis: "redis://cache",
			db: "postgres://h@db1:5432,db2:5432/horizon", wantErr: "HORIZON_DATABASE_URL: names several hosts but not target_session_attrs=read-write"},
		{name: "two postgres hosts, any", redis: "redis://cache",
			db: "postgres://h@db1:5432,db2:5432/horizon?target_session_attrs=any", wantErr: "HORIZON_DATABASE_URL: names several hosts"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := config.Load(lookup(map[string]string{"HORIZON_DATABASE_URL": tc.db, "HORIZON_REDIS_URL": tc.redis, "HORIZON_SECRET_KEY": key}))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Redis.Sentinel() != tc.sentinel {
				t.Errorf("got Sentinel() %v, want %v", c.Redis.Sentinel(), tc.sentinel)
			}
			warnings := strings.Join(c.Warnings, "; ")
			if (tc.wantWarning == "") != (warnings == "") || !strings.Contains(warnings, tc.wantWarning) {
				t.Errorf("got warnings %q, want %q", warnings, tc.wantWarning)
			}
		})
	}
}
