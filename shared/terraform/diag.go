package terraform

import (
	"strings"
)

// Error is a Terraform command that failed, with what Terraform itself said went wrong. Its
// first line — what a failed card shows — is Terraform's first error diagnostic ("local-exec
// provisioner error: db module is broken at this commit") followed by the wrapper context
// ("terraform apply: exit status 1"); the next lines hold all of Terraform's stderr. Like every
// Terraform error it may hold secrets: mask it before it is stored or shown.
type Error struct {
	Op     string // e.g. "terraform apply"
	Reason string // the first error diagnostic's summary and the last line of its detail; "" if none
	Err    error  // terraform-exec's error: the exit status, then stderr
}

// failed wraps a command's error in an *Error (nil stays nil).
func failed(op string, err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	return &Error{Op: op, Reason: diagnostic(msg), Err: err}
}

func (e *Error) Error() string {
	msg := e.Err.Error()
	if e.Reason == "" {
		return e.Op + ": " + msg
	}
	status, rest, _ := strings.Cut(msg, "\n")
	return e.Reason + " (" + e.Op + ": " + status + ")\n" + rest
}

func (e *Error) Unwrap() error { return e.Err }

// diagnostic finds Terraform's first "Error: <summary>" in its output (with or without the
// box drawing of its diagnostics) and returns the summary with the last line of its detail,
// which is where Terraform puts the most specific part (a provisioner's output, a provider's
// answer; for a local-exec provisioner, the command's output). Source lines ("with …",
// "on … line …", code) are skipped.
func diagnostic(out string) string {
	var summary, last string
	for _, raw := range strings.Split(out, "\n") {
		line := strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(raw), "│╷╵"))
		switch {
		case summary == "" && strings.HasPrefix(line, "Error: "):
			summary = strings.TrimPrefix(line, "Error: ")
		case summary == "":
		case strings.HasPrefix(line, "Error: ") || strings.HasPrefix(line, "Warning: "):
			return join(summary, last) // the next diagnostic
		case line == "" || strings.HasPrefix(line, "with ") || strings.HasPrefix(line, "on ") || isSourceLine(line):
		default:
			// A provisioner's detail is "Error running command '<cmd>': exit status N. Output:
			// <output>", the command wrapped over lines: what matters is its output.
			if _, output, ok := strings.Cut(line, "Output: "); ok {
				line = strings.TrimSpace(output)
			}
			if line != "" {
				last = line
			}
		}
	}
	return join(summary, last)
}

func join(summary, detail string) string {
	if summary == "" || detail == "" {
		return summary
	}
	return summary + ": " + detail
}

// isSourceLine recognises Terraform's quoted source ("10:   provisioner …").
func isSourceLine(line string) bool {
	i := strings.IndexByte(line, ':')
	if i <= 0 {
		return false
	}
	for _, r := range line[:i] {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
