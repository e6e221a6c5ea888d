package runs

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"horizon/shared/horizon"
	"horizon/shared/isotemplate"
	"horizon/shared/logstream"
	"horizon/shared/secrets"
	"horizon/shared/store"
)

// finishISO ends an ISO's run and moves the ISO to the state the run's outcome gives, which
// it returns: a build that succeeded leaves it built, a removal that succeeded removed (its VM
// ids are released); anything else failed, with the run's first error in the history.
func finishISO(ctx context.Context, tx pgx.Tx, run horizon.Run, final horizon.RunState, steps []horizon.Step) (horizon.ISOState, error) {
	firstErr := firstError(final, steps, isotemplate.StepLabel)
	if _, err := store.RunSetState(ctx, tx, run.ID, final, firstErr); err != nil {
		return "", err
	}
	to := horizon.ISOFailed
	switch {
	case final == horizon.RunSucceeded && run.Kind == horizon.RunISORemove:
		to = horizon.ISORemoved
		if err := store.VMIDReleaseISO(ctx, tx, *run.ISOID); err != nil {
			return "", err
		}
	case final == horizon.RunSucceeded:
		to = horizon.ISOBuilt
	}
	_, err := store.ISOSetState(ctx, tx, horizon.ISOStateChange{ISOID: *run.ISOID, RunID: &run.ID, To: to, ActorID: run.ActorID, Error: firstErr})
	return to, err
}

// endISOLog writes the summary of a finished ISO run as its last log lines, stores the lines a
// dead writer streamed and never stored, then ends its log.
//
// A repair (the run ended without the end of its log) follows an advance that may have died
// after writing the summary, or part of it: it stores first what that advance streamed, then
// writes only the summary lines the stored log does not yet end with, so that the log has the
// summary once. When it cannot tell, it leaves the log unended for the reconciler's next pass
// rather than risk a second summary.
func (a Advancer) endISOLog(ctx context.Context, log *slog.Logger, run horizon.Run, repair bool) {
	if repair {
		if _, err := a.Logs.StoreStreamed(ctx, run.ID, *run.ISOID); err != nil {
			log.WarnContext(ctx, "store the lines of the run's log stream that log_lines lacks; the log stays unended", "error", err)
			return
		}
	}
	steps, err := store.StepsOfRun(ctx, a.DB, run.ID)
	if err != nil {
		log.WarnContext(ctx, "read the ISO run's steps for its summary", "error", err)
	} else {
		lines := summaryLines(run, isotemplate.Summarize(steps))
		if repair {
			written, err := summaryWritten(ctx, a.DB, run.ID, lines)
			if err != nil {
				log.WarnContext(ctx, "read the ISO run's log for its summary; the log stays unended", "error", err)
				return
			}
			lines = lines[written:]
		}
		// Lines are masked with an empty masker: they repeat step reasons and first error lines,
		// which their steps already masked.
		w := a.Logs.NewWriter(run.ID, *run.ISOID, &secrets.Masker{})
		for _, line := range lines {
			_ = w.Line(uuid.Nil, "", 0, logstream.Horizon, line) // refused only once closing
		}
		if err := w.Close(ctx); err != nil {
			log.WarnContext(ctx, "write the ISO run's summary", "error", err)
		}
	}
	if _, err := a.Logs.StoreStreamed(ctx, run.ID, *run.ISOID); err != nil {
		log.WarnContext(ctx, "store the lines of the run's log stream that log_lines lacks", "error", err)
	}
	if err := a.Logs.End(ctx, run.ID, *run.ISOID, string(run.State), 0); err != nil {
		log.WarnContext(ctx, "end the run's log stream", "error", err)
	}
}

// summaryWritten returns how many of the summary's first lines the run's stored log ends with:
// the summary an advance wrote, whole or in part, before it died. The summary is written after
// every step of the run has ended, so it is the log's last lines; lines of no step that Horizon
// wrote are the summary's, a step's output never.
func summaryWritten(ctx context.Context, db *pgxpool.Pool, run uuid.UUID, summary []string) (int, error) {
	tail, err := store.LogLinesOfRunTail(ctx, db, run, store.LogPosMax, store.LogFilter{}, len(summary))
	if err != nil {
		return 0, err
	}
	for n := len(tail); n > 0; n-- {
		end := tail[len(tail)-n:]
		if slices.EqualFunc(end, summary[:n], func(l store.LogLine, text string) bool {
			return l.StepID == uuid.Nil && l.FD == string(logstream.Horizon) && l.Text == text
		}) {
			return n, nil
		}
	}
	return 0, nil
}

// summaryLines renders a summary for the log.
func summaryLines(run horizon.Run, s isotemplate.Summary) []string {
	what := "build"
	if run.Kind == horizon.RunISORemove {
		what = "removal"
	}
	lines := []string{fmt.Sprintf("summary: %s %s", what, run.State)}
	for _, part := range []struct {
		title string
		items []string
	}{{"done", s.Done}, {"skipped", s.Skipped}, {"failed", s.Failed}, {"not run", s.NotRun}} {
		if len(part.items) == 0 {
			continue
		}
		lines = append(lines, fmt.Sprintf("  %s (%d):", part.title, len(part.items)))
		for _, item := range part.items {
			lines = append(lines, "    "+strings.TrimSpace(item))
		}
	}
	return lines
}
