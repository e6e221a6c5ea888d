package logstream

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/google/uuid"

	"horizon/shared/rstream"
	"horizon/shared/store"
)

// Format is a download format.
type Format string

// The download formats.
const (
	// Text is one line per log line: "<at> <job>#<execution> <fd> <text>", at in UTC with
	// milliseconds, "-" for a line of no job. A stack's download starts each run with a
	// "== run <id> ==" line.
	Text Format = "text"
	// NDJSON is one JSON object per line, as documented on Line.
	NDJSON Format = "ndjson"
)

// downloadPage is how many rows Download reads per query. Each page is read whole and the
// query closed before writing it, so a slow client holds neither a connection nor a snapshot.
const downloadPage = 2000

// Query says which log Download reads: one run's (Run set), or every run of a stack in the
// order they were created (Stack set, Run zero), narrowed by Filter.
type Query struct {
	Run    uuid.UUID
	Stack  uuid.UUID
	Filter Filter
	// Before ends a run's download before that line (zero: at the run's end).
	Before rstream.ID
	// Tail, when positive, keeps only a run's last Tail lines (before Before): a viewer reads
	// a long log's end first and the rest behind it.
	Tail int
}

// Download writes the stored log lines that q selects to w in format, in order, and returns
// how many lines it wrote. It reads log_lines a page at a time with keyset pagination, so its
// memory does not depend on the size of the log, and its database cost per page does not
// either. It does not read Redis: a line is in the download once its Writer stored it (within
// Config.CopyInterval). The caller checks that the caller may see the run or stack.
func (c *Client) Download(ctx context.Context, w io.Writer, q Query, format Format) (int64, error) {
	if format != Text && format != NDJSON {
		return 0, fmt.Errorf("log download format %q: want text or ndjson", format)
	}
	if (q.Run == uuid.Nil) == (q.Stack == uuid.Nil) {
		return 0, errors.New("log download: want a run or a stack")
	}
	if q.Run == uuid.Nil && (!q.Before.IsZero() || q.Tail > 0) {
		return 0, errors.New("log download: before and tail need a run")
	}
	before := store.LogPosMax
	if !q.Before.IsZero() {
		before = toPos(q.Before)
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	var (
		n       int64
		lastRun uuid.UUID
		after   store.LogPos
		buf     []byte
		page    = make([]store.LogLine, 0, downloadPage)
	)
	collect := func(r store.LogLine) error {
		page = append(page, r)
		return nil
	}
	for {
		page = page[:0]
		var err error
		switch {
		case q.Tail > 0:
			page, err = store.LogLinesOfRunTail(ctx, c.db, q.Run, before, q.Filter.store(), q.Tail) // held once, as the page
		case q.Run != uuid.Nil:
			_, err = store.LogLinesOfRun(ctx, c.db, q.Run, after, before, q.Filter.store(), downloadPage, collect)
		default:
			_, err = store.LogLinesOfStack(ctx, c.db, q.Stack, lastRun, after, q.Filter.store(), downloadPage, collect)
		}
		if err != nil {
			return n, err
		}
		for i := range page {
			r := &page[i]
			if q.Stack != uuid.Nil && format == Text && r.RunID != lastRun {
				buf = append(append(append(buf[:0], "== run "...), r.RunID.String()...), " ==\n"...)
				if _, err := bw.Write(buf); err != nil {
					return n, fmt.Errorf("write log download: %w", err)
				}
			}
			lastRun, after = r.RunID, store.LogPos{MS: r.StreamMS, Seq: r.StreamSeq}
			if buf, err = appendLine(buf[:0], r, format); err != nil {
				return n, err
			}
			if _, err := bw.Write(buf); err != nil {
				return n, fmt.Errorf("write log download: %w", err)
			}
			n++
		}
		if len(page) < downloadPage || q.Tail > 0 {
			break
		}
	}
	if err := bw.Flush(); err != nil {
		return n, fmt.Errorf("write log download: %w", err)
	}
	return n, nil
}

func appendLine(buf []byte, r *store.LogLine, format Format) ([]byte, error) {
	if format == NDJSON {
		l := fromRow(r)
		return append(l.AppendJSON(buf), '\n'), nil
	}
	buf = r.At.UTC().AppendFormat(buf, "2006-01-02T15:04:05.000Z07:00")
	buf = append(buf, ' ')
	if r.Job == "" {
		buf = append(buf, '-')
	} else {
		buf = append(append(buf, r.Job...), '#')
		buf = strconv.AppendInt(buf, int64(r.Execution), 10)
	}
	buf = append(append(append(buf, ' '), r.FD...), ' ')
	return append(append(buf, r.Text...), '\n'), nil
}
