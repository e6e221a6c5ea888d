package proxmox

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"regexp"
	"sort"
	"strings"

	pve "github.com/luthermonson/go-proxmox"
)

// Error kinds, matched with errors.Is.
var (
	// ErrAuth: the API token is wrong or revoked (401).
	ErrAuth = errors.New("proxmox: authentication failed")
	// ErrPermission: the token lacks a privilege (403 "Permission check failed (path, priv)";
	// the Message names both).
	ErrPermission = errors.New("proxmox: permission denied")
	// ErrNotFound: the VM, node, storage or task does not exist.
	ErrNotFound = errors.New("proxmox: not found")
	// ErrOffline: the node does not answer inside its cluster.
	ErrOffline = errors.New("proxmox: node offline")
	// ErrConflict: the object exists already.
	ErrConflict = errors.New("proxmox: conflict")
	// ErrBusy: another operation holds the object's lock, or a lock wait timed out: PVE refused
	// before changing anything, and the same call may succeed shortly.
	ErrBusy = errors.New("proxmox: busy")
	// ErrTLS: the server's certificate is not the pinned or trusted one.
	ErrTLS = errors.New("proxmox: TLS verification failed")
	// ErrUnreachable: nothing answered at the API URL.
	ErrUnreachable = errors.New("proxmox: unreachable")
	// ErrTaskFailed: a task (UPID) finished with an error exit status.
	ErrTaskFailed = errors.New("proxmox: task failed")
	// ErrFileExists: a download or upload refused to replace a file that is there already.
	ErrFileExists = errors.New("proxmox: file exists")
)

// ChecksumMismatchError is a download (download-url) whose bytes did not have the checksum
// asked for: Proxmox deleted them. Another attempt would fetch the same bytes.
type ChecksumMismatchError struct {
	Got, Expected string
}

func (e *ChecksumMismatchError) Error() string {
	return fmt.Sprintf("checksum mismatch: expected %s, got %s", e.Expected, e.Got)
}

// mismatchRE is how a download-url task's exit status reports a checksum mismatch.
var mismatchRE = regexp.MustCompile(`checksum mismatch: got '([0-9a-fA-F]*)' != expect '([0-9a-fA-F]*)'`)

// TaskExit is the error of a task that ended with the error exit status exit: a
// *ChecksumMismatchError when a download's checksum did not match, otherwise an *Error of kind
// ErrFileExists, ErrBusy (a lock or a lock wait: the same task may succeed shortly) or
// ErrTaskFailed, whose message is the exit status.
func TaskExit(exit string) error {
	if m := mismatchRE.FindStringSubmatch(exit); m != nil {
		return &ChecksumMismatchError{Got: m[1], Expected: m[2]}
	}
	e := &Error{Message: exit, Kind: ErrTaskFailed}
	switch {
	case fileExists(exit):
		e.Kind = ErrFileExists
	case TransientMessage(exit):
		e.Kind = ErrBusy
	}
	return e
}

// fileExists recognises Proxmox's refusal to replace an existing file.
func fileExists(msg string) bool { return strings.Contains(msg, "refusing to override existing file") }

// Error is a classified failure of one API call.
type Error struct {
	Kind    error  // one of the Err* kinds, or nil when unclassified
	Op      string // e.g. "GET /nodes"; "" for a task's exit status (TaskExit)
	Status  int    // HTTP status, 0 when no answer
	Message string // PVE's message, or the transport error
}

func (e *Error) Error() string {
	if e.Op == "" { // a task's exit status: a user reads it as Proxmox wrote it
		return e.Message
	}
	if e.Status != 0 {
		return fmt.Sprintf("%s: %d %s", e.Op, e.Status, e.Message)
	}
	return fmt.Sprintf("%s: %s", e.Op, e.Message)
}

func (e *Error) Is(target error) bool { return e.Kind != nil && target == e.Kind }

// classify turns whatever go-proxmox or the transport returned into an *Error.
func classify(op string, err error) error {
	if err == nil {
		return nil
	}
	var already *Error
	if errors.As(err, &already) {
		return err
	}
	e := &Error{Op: op, Message: err.Error()}
	var api *pve.APIError
	var tfe *pve.TaskFailedError
	var certErr *tls.CertificateVerificationError
	var unknownAuth x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var netErr net.Error
	switch {
	case errors.As(err, &tfe):
		e.Kind, e.Message = ErrTaskFailed, tfe.ExitStatus
	case errors.As(err, &api):
		e.Status, e.Message = api.StatusCode, strings.TrimSpace(api.Message)
		if len(api.Errors) > 0 {
			// "Parameter verification failed." says nothing; the reasons are per parameter.
			params := make([]string, 0, len(api.Errors))
			for name, why := range api.Errors {
				params = append(params, name+": "+strings.TrimSpace(why))
			}
			sort.Strings(params)
			e.Message = strings.TrimSuffix(e.Message, ".") + " (" + strings.Join(params, "; ") + ")"
		}
		switch {
		case api.StatusCode == 401:
			e.Kind = ErrAuth
		case api.StatusCode == 403:
			e.Kind = ErrPermission
		case api.StatusCode == 404 || strings.Contains(api.Message, "does not exist"):
			e.Kind = ErrNotFound
		case api.StatusCode == pve.StatusNodeConnectFailed || api.StatusCode == pve.StatusNodeRequestFailed:
			e.Kind = ErrOffline
		case fileExists(api.Message):
			e.Kind = ErrFileExists
		case strings.Contains(api.Message, "already exists"):
			e.Kind = ErrConflict
		case TransientMessage(api.Message):
			e.Kind = ErrBusy
		}
	case errors.Is(err, errPinMismatch), errors.As(err, &certErr), errors.As(err, &unknownAuth), errors.As(err, &hostErr):
		e.Kind = ErrTLS
	case errors.As(err, &netErr):
		e.Kind = ErrUnreachable
	}
	return e
}

// TransientMessage recognises the PVE refusals (API answers and task exit statuses) that mean
// "try again shortly": another operation holds the VM's config lock, or a lock wait timed out.
func TransientMessage(msg string) bool {
	m := strings.ToLower(msg)
	return strings.Contains(m, "can't lock file") || strings.Contains(m, "got timeout") || strings.Contains(m, "is locked")
}
