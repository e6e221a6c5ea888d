// Package metrics provides what /metrics serves beyond a process's own request and stream
// counters: figures that several processes contribute to, and figures read from the shared
// stores when Prometheus scrapes.
//
//   - The workers have no HTTP listener, and there are any number of them, so what they
//     measure is counted in Redis, next to the queues (Recorder): node-gate waits (a histogram
//     per node) and log lines written (a counter, incremented by logstream in the pipeline of
//     its XADDs, so it costs no round trip).
//   - Asynq queue depth and latency, and the steps of the runs in progress by state, are read
//     when scraped (Collector), with a deadline, from Redis and Postgres.
//
// Every API replica therefore serves the same values for these series: aggregate them across
// replicas with max (or scrape one), never with sum. They survive worker restarts; a Redis
// that loses them restarts the counters from zero, which Prometheus's rate() treats as a reset.
//
//	<prefix>:metrics:log_lines   STRING  lines added to the live log streams
//	<prefix>:metrics:gate_wait   HASH    "<server>/<node>|<bucket index>", "…|sum", "…|count"
package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hibiken/asynq"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"horizon/shared/horizon"
	"horizon/shared/store"
)

// LogLinesKey is the counter of log lines written, under prefix (HORIZON_NAMESPACE).
func LogLinesKey(prefix string) string { return prefix + ":metrics:log_lines" }

func gateWaitKey(prefix string) string { return prefix + ":metrics:gate_wait" }

// GateWaitBuckets are the upper bounds, in seconds, of the gate-wait histogram: a build waits
// from nothing (a free node) to many minutes (a queue of large VMs).
var GateWaitBuckets = []float64{0.1, 1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600}

// Recorder records, in Redis, what the workers measure. It is safe for concurrent use.
type Recorder struct {
	rdb    redis.UniversalClient
	prefix string
}

// NewRecorder returns a Recorder writing under prefix.
func NewRecorder(rdb redis.UniversalClient, prefix string) *Recorder {
	return &Recorder{rdb: rdb, prefix: prefix}
}

// GateWait records that a build on node (queue.GateNode: "<server>/<node>") waited d for the
// node's gate, from the moment its step was ready. The buckets are stored apart (not
// cumulative), with the sum and count, in one pipeline.
func (r *Recorder) GateWait(ctx context.Context, node string, d time.Duration) error {
	secs := d.Seconds()
	i := sort.SearchFloat64s(GateWaitBuckets, secs) // len(GateWaitBuckets) is +Inf
	key := gateWaitKey(r.prefix)
	_, err := r.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.HIncrBy(ctx, key, node+"|"+strconv.Itoa(i), 1)
		p.HIncrByFloat(ctx, key, node+"|sum", secs)
		p.HIncrBy(ctx, key, node+"|count", 1)
		return nil
	})
	if err != nil {
		return fmt.Errorf("record gate wait of %s: %w", node, err)
	}
	return nil
}

// collectTimeout bounds one scrape's reads of Redis and Postgres.
const collectTimeout = 3 * time.Second

// Collector is a prometheus.Collector reading the shared figures when scraped. A source that
// fails is logged and its series left out of that scrape, so that the others still report.
type Collector struct {
	rdb       redis.UniversalClient
	prefix    string
	inspector *asynq.Inspector
	queues    []string
	db        *pgxpool.Pool
	log       *slog.Logger

	logLines, gateWait, queueTasks, queueLatency, steps *prometheus.Desc
}

// NewCollector returns a Collector of prefix's figures, of the Asynq queues, through
// inspector, and of the steps in db.
func NewCollector(rdb redis.UniversalClient, prefix string, inspector *asynq.Inspector, queues []string, db *pgxpool.Pool, log *slog.Logger) *Collector {
	return &Collector{rdb: rdb, prefix: prefix, inspector: inspector, queues: queues, db: db, log: log,
		logLines: prometheus.NewDesc("horizon_log_lines_total",
			"Deploy log lines added to the live log streams by all workers (rate() is lines written per second).", nil, nil),
		gateWait: prometheus.NewDesc("horizon_gate_wait_seconds",
			"How long builds waited for their node's build gate, from their step's readiness, per node (<server>/<node>).", []string{"node"}, nil),
		queueTasks: prometheus.NewDesc("horizon_queue_tasks",
			"Tasks in each Asynq queue by state (pending is the depth).", []string{"queue", "state"}, nil),
		queueLatency: prometheus.NewDesc("horizon_queue_latency_seconds",
			"Age of the oldest pending task of each Asynq queue.", []string{"queue"}, nil),
		steps: prometheus.NewDesc("horizon_steps",
			"Steps of the runs in progress, by state.", []string{"state"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.logLines, c.gateWait, c.queueTasks, c.queueLatency, c.steps} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), collectTimeout)
	defer cancel()
	for name, collect := range map[string]func(context.Context, chan<- prometheus.Metric) error{
		"log lines": c.collectLogLines, "gate waits": c.collectGateWaits, "queues": c.collectQueues, "steps": c.collectSteps,
	} {
		if err := collect(ctx, ch); err != nil {
			c.log.WarnContext(ctx, "collect metrics", "source", name, "error", err)
		}
	}
}

func (c *Collector) collectLogLines(ctx context.Context, ch chan<- prometheus.Metric) error {
	n, err := c.rdb.Get(ctx, LogLinesKey(c.prefix)).Float64()
	if err != nil && !errors.Is(err, redis.Nil) {
		return err
	}
	ch <- prometheus.MustNewConstMetric(c.logLines, prometheus.CounterValue, n)
	return nil
}

func (c *Collector) collectGateWaits(ctx context.Context, ch chan<- prometheus.Metric) error {
	fields, err := c.rdb.HGetAll(ctx, gateWaitKey(c.prefix)).Result()
	if err != nil {
		return err
	}
	type hist struct {
		buckets []uint64 // per bucket, the last one +Inf
		sum     float64
		count   uint64
	}
	nodes := map[string]*hist{}
	for f, v := range fields {
		node, part, ok := cutLast(f, "|")
		if !ok {
			continue
		}
		h := nodes[node]
		if h == nil {
			h = &hist{buckets: make([]uint64, len(GateWaitBuckets)+1)}
			nodes[node] = h
		}
		switch part {
		case "sum":
			h.sum, _ = strconv.ParseFloat(v, 64) // written by HINCRBYFLOAT
		case "count":
			h.count, _ = strconv.ParseUint(v, 10, 64) // written by HINCRBY
		default:
			if i, err := strconv.Atoi(part); err == nil && i >= 0 && i < len(h.buckets) {
				h.buckets[i], _ = strconv.ParseUint(v, 10, 64)
			}
		}
	}
	for node, h := range nodes {
		cum := map[float64]uint64{}
		var run uint64
		for i, le := range GateWaitBuckets {
			run += h.buckets[i]
			cum[le] = run
		}
		m, err := prometheus.NewConstHistogram(c.gateWait, h.count, h.sum, cum, node)
		if err != nil {
			return err
		}
		ch <- m
	}
	return nil
}

func cutLast(s, sep string) (string, string, bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return "", "", false
	}
	return s[:i], s[i+len(sep):], true
}

func (c *Collector) collectQueues(_ context.Context, ch chan<- prometheus.Metric) error {
	known, err := c.inspector.Queues()
	if err != nil {
		return fmt.Errorf("list queues: %w", err)
	}
	var errs []error
	for _, q := range c.queues {
		info := &asynq.QueueInfo{Queue: q} // a queue nothing was ever enqueued on is unknown
		if slices.Contains(known, q) {
			info, err = c.inspector.GetQueueInfo(q)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("queue %s: %w", q, err))
			continue
		}
		for state, n := range map[string]int{"pending": info.Pending, "active": info.Active, "scheduled": info.Scheduled,
			"retry": info.Retry, "archived": info.Archived} {
			ch <- prometheus.MustNewConstMetric(c.queueTasks, prometheus.GaugeValue, float64(n), q, state)
		}
		ch <- prometheus.MustNewConstMetric(c.queueLatency, prometheus.GaugeValue, math.Max(0, info.Latency.Seconds()), q)
	}
	return errors.Join(errs...)
}

// stepStates are the states reported, zeros included, so that a series does not vanish.
var stepStates = []horizon.StepState{horizon.StepPending, horizon.StepQueued, horizon.StepRunning, horizon.StepSucceeded,
	horizon.StepFailed, horizon.StepHeld, horizon.StepCanceled, horizon.StepSkipped}

func (c *Collector) collectSteps(ctx context.Context, ch chan<- prometheus.Metric) error {
	counts, err := store.StepCountsInProgress(ctx, c.db)
	if err != nil {
		return err
	}
	for _, s := range stepStates {
		ch <- prometheus.MustNewConstMetric(c.steps, prometheus.GaugeValue, float64(counts[s]), string(s))
	}
	return nil
}
