package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// LogLine is one row of log_lines, the durable copy of a deploy log line (shared/logstream).
type LogLine struct {
	RunID, StackID uuid.UUID
	// StreamMS and StreamSeq are the line's stream id; they order the lines of a run.
	StreamMS, StreamSeq int64
	StepID              uuid.UUID // uuid.Nil for a run-level line (stored as NULL)
	Job                 string    // "" for a run-level line; Job and Execution are then NULL
	Execution           int
	At                  time.Time
	FD                  string // stdout, stderr or horizon
	Text                string
}

// LogPos is a position in a run's lines: the stream id of a line.
type LogPos struct{ MS, Seq int64 }

// LogPosMax sorts after every line.
var LogPosMax = LogPos{MS: math.MaxInt64, Seq: math.MaxInt64}

// LogFilter narrows the lines a scan returns; a zero field does not filter.
type LogFilter struct {
	Job       string
	Execution *int
	Step      uuid.UUID
}

var logLineColumns = []string{"run_id", "stream_ms", "stream_seq", "stack_id", "step_id", "job", "execution", "at", "fd", "text"}

const logLineSelect = `SELECT run_id, stream_ms, stream_seq, stack_id, step_id, job, execution, at, fd, text FROM log_lines`

// LogLinesCopy stores lines with one COPY. It is idempotent: when some of the lines are stored
// already (a retry after a COPY whose commit was not acknowledged), it inserts the others and
// skips those.
func LogLinesCopy(ctx context.Context, q Querier, lines []LogLine) error {
	_, err := q.CopyFrom(ctx, pgx.Identifier{"log_lines"}, logLineColumns, pgx.CopyFromSlice(len(lines), func(i int) ([]any, error) {
		l := &lines[i]
		// pgtype.UUID, not uuid.UUID: COPY encodes binary, and pgx reaches uuid.UUID's binary
		// form only through its driver.Valuer string, a failed encode (an fmt.Errorf) and a
		// text parse, per value — a fifth of the log pipeline's CPU before this.
		return []any{pgtype.UUID{Bytes: l.RunID, Valid: true}, l.StreamMS, l.StreamSeq, pgtype.UUID{Bytes: l.StackID, Valid: true},
			pgtype.UUID{Bytes: l.StepID, Valid: l.StepID != uuid.Nil}, nullJob(l.Job), nullExecution(l.Job, l.Execution), l.At, l.FD, l.Text}, nil
	}))
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" {
		return logLinesInsertNew(ctx, q, lines)
	}
	if err != nil {
		return fmt.Errorf("copy %d log lines: %w", len(lines), translate(err))
	}
	return nil
}

func logLinesInsertNew(ctx context.Context, q Querier, lines []LogLine) error {
	_, err := logLinesInsert(ctx, q, lines, "")
	return err
}

// logLinesInsert inserts the lines not stored yet, and those only that also pass the SQL
// predicate where on the unnested row u (none when ""), and returns how many it inserted.
func logLinesInsert(ctx context.Context, q Querier, lines []LogLine, where string, args ...any) (int64, error) {
	var (
		runs, stacks, steps []pgtype.UUID
		ms, seqs            []int64
		jobs                []pgtype.Text
		execs               []pgtype.Int4
		ats                 []time.Time
		fds, texts          []string
	)
	for _, l := range lines {
		runs = append(runs, pgtype.UUID{Bytes: l.RunID, Valid: true})
		stacks = append(stacks, pgtype.UUID{Bytes: l.StackID, Valid: true})
		steps = append(steps, pgtype.UUID{Bytes: l.StepID, Valid: l.StepID != uuid.Nil})
		ms, seqs = append(ms, l.StreamMS), append(seqs, l.StreamSeq)
		jobs = append(jobs, pgtype.Text{String: l.Job, Valid: l.Job != ""})
		execs = append(execs, pgtype.Int4{Int32: int32(l.Execution), Valid: l.Job != ""})
		ats, fds, texts = append(ats, l.At), append(fds, l.FD), append(texts, l.Text)
	}
	if where != "" {
		where = " WHERE " + where
	}
	tag, err := q.Exec(ctx, `INSERT INTO log_lines (run_id, stream_ms, stream_seq, stack_id, step_id, job, execution, at, fd, text)
		SELECT * FROM unnest($1::uuid[], $2::bigint[], $3::bigint[], $4::uuid[], $5::uuid[], $6::text[], $7::int[], $8::timestamptz[], $9::text[], $10::text[])
			AS u (run_id, stream_ms, stream_seq, stack_id, step_id, job, execution, at, fd, text)`+where+`
		ON CONFLICT (run_id, stream_ms, stream_seq) DO NOTHING`,
		append([]any{runs, ms, seqs, stacks, steps, jobs, execs, ats, fds, texts}, args...)...)
	if err != nil {
		return 0, fmt.Errorf("insert %d log lines: %w", len(lines), translate(err))
	}
	return tag.RowsAffected(), nil
}

// LogLinesInsertStreamed stores the lines of a run's live stream that log_lines lacks (a
// writer that streamed them died before its COPY) and returns how many it stored. It is
// idempotent, and safe beside a writer still storing the same lines: a line stored already
// under its id is skipped, and so is a line stored under an id whose sequence number is at
// least twinSeq (logstream's fallback ids) with the same step, time, fd and text — the same
// line, whose XADD outcome its writer never learned.
func LogLinesInsertStreamed(ctx context.Context, q Querier, lines []LogLine, twinSeq int64) (int64, error) {
	return logLinesInsert(ctx, q, lines, `NOT EXISTS (SELECT 1 FROM log_lines t WHERE t.run_id = u.run_id AND t.stream_seq >= $11
		AND t.step_id IS NOT DISTINCT FROM u.step_id AND t.at = u.at AND t.fd = u.fd AND t.text = u.text)`, twinSeq)
}

// LogLinesStoredBetween returns, in order, the positions of run's stored lines from first to
// last, both included.
func LogLinesStoredBetween(ctx context.Context, q Querier, run uuid.UUID, first, last LogPos) ([]LogPos, error) {
	rows, err := q.Query(ctx, `SELECT stream_ms, stream_seq FROM log_lines
		WHERE run_id = $1 AND (stream_ms, stream_seq) >= ($2, $3) AND (stream_ms, stream_seq) <= ($4, $5)
		ORDER BY stream_ms, stream_seq`, run, first.MS, first.Seq, last.MS, last.Seq)
	if err != nil {
		return nil, fmt.Errorf("query log line positions of run %s: %w", run, translate(err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (LogPos, error) {
		var p LogPos
		return p, r.Scan(&p.MS, &p.Seq)
	})
	if err != nil {
		return nil, fmt.Errorf("read log line positions of run %s: %w", run, translate(err))
	}
	return out, nil
}

// LogLinesCountFrom counts run's lines that match f and whose sequence number is at least
// seqFrom (logstream passes its fallback bit: the lines that were never in the live stream).
// It walks the run's rows.
func LogLinesCountFrom(ctx context.Context, q Querier, run uuid.UUID, f LogFilter, seqFrom int64) (int64, error) {
	args := []any{run, seqFrom}
	var n int64
	err := q.QueryRow(ctx, `SELECT count(*) FROM log_lines WHERE run_id = $1 AND stream_seq >= $2`+logFilterSQL(f, &args), args...).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count log lines of run %s: %w", run, translate(err))
	}
	return n, nil
}

// LogLinesOfRun calls fn, in stream order, for up to limit lines of run strictly between after
// and before that match f, and returns how many it passed: one keyset page. Rows are passed
// to fn as they arrive, never collected; the filter is applied in SQL, with an index when it
// names a job and an execution. An error from fn stops the scan and is returned as is.
//
// It takes the pool, not a Querier, because it runs in a transaction of its own that turns
// sorting off. The planner's estimate for one run's rows comes from table-wide statistics and
// is far too low for a big run whose lines are new; it then prefers a bitmap scan and a sort
// of every remaining row of the run, on every page, which makes a paged read quadratic (a
// million-line download took 45 s instead of 2). Without sorting it must walk an index in
// order, which costs each page only its own rows whatever the estimate.
func LogLinesOfRun(ctx context.Context, db *pgxpool.Pool, run uuid.UUID, after, before LogPos, f LogFilter, limit int, fn func(LogLine) error) (int, error) {
	args := []any{run, after.MS, after.Seq, before.MS, before.Seq}
	sql := logLineSelect + ` WHERE run_id = $1 AND (stream_ms, stream_seq) > ($2, $3) AND (stream_ms, stream_seq) < ($4, $5)` +
		logFilterSQL(f, &args) + ` ORDER BY stream_ms, stream_seq LIMIT ` + strconv.Itoa(limit)
	return scanLogLinesInOrder(ctx, db, sql, args, fn)
}

// LogLinesOfRunTail returns, in stream order, the last limit lines of run before the position
// before that match f: a log's end, read first so that a reader sees it at once. The page is
// read backwards along the same index and reversed in place.
func LogLinesOfRunTail(ctx context.Context, db *pgxpool.Pool, run uuid.UUID, before LogPos, f LogFilter, limit int) ([]LogLine, error) {
	args := []any{run, before.MS, before.Seq}
	sql := logLineSelect + ` WHERE run_id = $1 AND (stream_ms, stream_seq) < ($2, $3)` +
		logFilterSQL(f, &args) + ` ORDER BY stream_ms DESC, stream_seq DESC LIMIT ` + strconv.Itoa(limit)
	tail := make([]LogLine, 0, min(limit, 1024))
	if _, err := scanLogLinesInOrder(ctx, db, sql, args, func(l LogLine) error {
		tail = append(tail, l)
		return nil
	}); err != nil {
		return nil, err
	}
	slices.Reverse(tail)
	return tail, nil
}

// LogLinesOfStack is LogLinesOfRun over every run of stack, in (run, stream id) order — runs
// in creation order, since run ids are time-ordered — starting after the line (afterRun, after).
func LogLinesOfStack(ctx context.Context, db *pgxpool.Pool, stack, afterRun uuid.UUID, after LogPos, f LogFilter, limit int, fn func(LogLine) error) (int, error) {
	args := []any{stack, afterRun, after.MS, after.Seq}
	sql := logLineSelect + ` WHERE stack_id = $1 AND (run_id, stream_ms, stream_seq) > ($2, $3, $4)` +
		logFilterSQL(f, &args) + ` ORDER BY run_id, stream_ms, stream_seq LIMIT ` + strconv.Itoa(limit)
	return scanLogLinesInOrder(ctx, db, sql, args, fn)
}

// scanLogLinesInOrder runs a page query with sorting disabled; see LogLinesOfRun.
func scanLogLinesInOrder(ctx context.Context, db *pgxpool.Pool, sql string, args []any, fn func(LogLine) error) (int, error) {
	return WithTxV(ctx, db, func(ctx context.Context, tx pgx.Tx) (int, error) {
		if _, err := tx.Exec(ctx, `SET LOCAL enable_sort = off`); err != nil {
			return 0, fmt.Errorf("pin log scan plan: %w", translate(err))
		}
		return scanLogLines(ctx, tx, sql, args, fn)
	})
}

// logFilterSQL returns the predicates for f, appending their arguments. The statement text
// depends only on which fields are set, so each shape gets a plan that can use an index;
// "$n IS NULL OR …" would give one generic plan that cannot.
func logFilterSQL(f LogFilter, args *[]any) string {
	var b strings.Builder
	add := func(col string, v any) {
		*args = append(*args, v)
		fmt.Fprintf(&b, " AND %s = $%d", col, len(*args))
	}
	if f.Job != "" {
		add("job", f.Job)
	}
	if f.Execution != nil {
		add("execution", *f.Execution)
	}
	if f.Step != uuid.Nil {
		add("step_id", f.Step)
	}
	return b.String()
}

func scanLogLines(ctx context.Context, q Querier, sql string, args []any, fn func(LogLine) error) (int, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return 0, fmt.Errorf("query log lines: %w", translate(err))
	}
	defer rows.Close()
	var (
		n    int
		l    LogLine
		step pgtype.UUID
		job  pgtype.Text
		exec pgtype.Int4
	)
	for rows.Next() {
		if err := rows.Scan(&l.RunID, &l.StreamMS, &l.StreamSeq, &l.StackID, &step, &job, &exec, &l.At, &l.FD, &l.Text); err != nil {
			return n, fmt.Errorf("scan log line: %w", err)
		}
		l.StepID, l.Job, l.Execution = uuid.UUID(step.Bytes), job.String, int(exec.Int32)
		if !step.Valid {
			l.StepID = uuid.Nil
		}
		if err := fn(l); err != nil {
			return n, err
		}
		n++
	}
	if err := rows.Err(); err != nil {
		return n, fmt.Errorf("read log lines: %w", translate(err))
	}
	return n, nil
}

// LogLinesCountBefore counts run's lines before the position before whose sequence number is
// below seqBelow (logstream passes its fallback bit, to count only lines that have a Redis
// id). It walks the primary key's range, so it costs the number of lines it counts.
func LogLinesCountBefore(ctx context.Context, q Querier, run uuid.UUID, before LogPos, seqBelow int64) (int64, error) {
	var n int64
	err := q.QueryRow(ctx, `SELECT count(*) FROM log_lines
		WHERE run_id = $1 AND (stream_ms, stream_seq) < ($2, $3) AND stream_seq < $4`, run, before.MS, before.Seq, seqBelow).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count log lines of run %s: %w", run, translate(err))
	}
	return n, nil
}

// LogEnd is a row of log_ends: the end of a run's log.
type LogEnd struct {
	RunID, StackID uuid.UUID
	Pos            LogPos // the stream id of the eof entry
	Status         string // the run's final state
	At             time.Time
}

// LogEndInsert records the end of a run's log. The first end recorded for a run wins; later
// ones are ignored.
func LogEndInsert(ctx context.Context, q Querier, e LogEnd) error {
	_, err := q.Exec(ctx, `INSERT INTO log_ends (run_id, stack_id, stream_ms, stream_seq, status, at)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (run_id) DO NOTHING`,
		e.RunID, e.StackID, e.Pos.MS, e.Pos.Seq, e.Status, e.At)
	if err != nil {
		return fmt.Errorf("record end of log of run %s: %w", e.RunID, translate(err))
	}
	return nil
}

// LogEndGet returns the end of run's log, or horizon.ErrNotFound while it has none.
func LogEndGet(ctx context.Context, q Querier, run uuid.UUID) (LogEnd, error) {
	e := LogEnd{RunID: run}
	err := q.QueryRow(ctx, `SELECT stack_id, stream_ms, stream_seq, status, at FROM log_ends WHERE run_id = $1`, run).
		Scan(&e.StackID, &e.Pos.MS, &e.Pos.Seq, &e.Status, &e.At)
	if err != nil {
		return e, fmt.Errorf("end of log of run %s: %w", run, translate(err))
	}
	return e, nil
}

// LogDeleteStack deletes every log line and log end of stack, and returns how many lines it
// deleted.
func LogDeleteStack(ctx context.Context, q Querier, stack uuid.UUID) (int64, error) {
	tag, err := q.Exec(ctx, `DELETE FROM log_lines WHERE stack_id = $1`, stack)
	if err != nil {
		return 0, fmt.Errorf("delete log lines of stack %s: %w", stack, translate(err))
	}
	if _, err := q.Exec(ctx, `DELETE FROM log_ends WHERE stack_id = $1`, stack); err != nil {
		return 0, fmt.Errorf("delete log ends of stack %s: %w", stack, translate(err))
	}
	return tag.RowsAffected(), nil
}

func nullJob(job string) any {
	if job == "" {
		return nil
	}
	return job
}

func nullExecution(job string, execution int) any {
	if job == "" {
		return nil
	}
	return int32(execution)
}
