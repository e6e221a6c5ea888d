package worker

import (
	"fmt"
	"log/slog"
	"os"
)

// asynqLogger routes Asynq's own log lines into our structured logger.
type asynqLogger struct{ log *slog.Logger }

func (l asynqLogger) Debug(args ...any) { l.log.Debug(fmt.Sprint(args...), "component", "asynq") }
func (l asynqLogger) Info(args ...any)  { l.log.Info(fmt.Sprint(args...), "component", "asynq") }
func (l asynqLogger) Warn(args ...any)  { l.log.Warn(fmt.Sprint(args...), "component", "asynq") }
func (l asynqLogger) Error(args ...any) { l.log.Error(fmt.Sprint(args...), "component", "asynq") }

// Fatal exits, as Asynq expects of its logger: it calls Fatal only when it cannot go on.
func (l asynqLogger) Fatal(args ...any) {
	l.log.Error(fmt.Sprint(args...), "component", "asynq", "fatal", true)
	os.Exit(1)
}
