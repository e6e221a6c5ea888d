package terraform

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hashicorp/terraform-exec/tfexec"
)

// erroredStateFile is what Terraform writes into the work dir when it cannot save state to the
// backend at the end of a run ("Failed to persist state … errored.tfstate").
const erroredStateFile = "errored.tfstate"

// ErroredStateError reports an errored.tfstate that could not be pushed to the backend. The
// file is the state of infrastructure Terraform created or changed; until it is pushed the
// backend does not know about it, and the work dir holding it must be kept. Err is why the push
// failed (or the run's own error, when there was one).
type ErroredStateError struct {
	Path string
	Err  error
}

func (e *ErroredStateError) Error() string {
	return fmt.Sprintf("state not saved to the backend, kept in %s: %v", e.Path, e.Err)
}

func (e *ErroredStateError) Unwrap() error { return e.Err }

func (w *Workdir) erroredPath() string { return filepath.Join(w.dir, erroredStateFile) }

// PushErroredState pushes an errored.tfstate left in the work dir to the backend and removes the
// file. It returns nil when there is no such file, and an *ErroredStateError when the push fails
// (the file is kept). Apply and Destroy call it themselves after a failure; call it again once
// the backend is reachable, before Close.
func (w *Workdir) PushErroredState(ctx context.Context) error {
	path := w.erroredPath()
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	w.note("terraform could not save state to the backend; pushing " + erroredStateFile)
	// state push prints nothing worth logging and its errors are returned; running it quietly
	// keeps the state (which holds secrets) out of the sink whatever a future version prints.
	err := w.quietly(w.tf, func(tf *tfexec.Terraform) error {
		return settled(ctx, tf.StatePush(ctx, path, tfexec.Lock(true), tfexec.LockTimeout(w.r.cfg.LockTimeout.String())))
	})
	if err != nil {
		return &ErroredStateError{Path: path, Err: fmt.Errorf("terraform state push: %w", err)}
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("remove pushed %s: %w", erroredStateFile, err)
	}
	w.note("pushed " + erroredStateFile + " to the backend")
	return nil
}
