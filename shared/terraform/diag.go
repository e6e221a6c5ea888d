package terraform

import (
	"context"
	"errors"
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

// failed wraps a command's error in an *Error (nil stays nil). A canceled command's error is
// settled first: it may be one whose Error method panics.
func failed(ctx context.Context, op string, err error) error {
	err = settled(ctx, err)
	if err == nil {
		return nil
	}
	msg := err.Error()
	return &Error{Op: op, Reason: diagnostic(msg), Err: err}
}

// settled returns an error terraform-exec returned in a form that is safe to format: every
// call into terraform-exec passes its error through here before anything reads it.
//
// terraform-exec (v0.26) returns its unexported cmdErr when the command's context ended, so
// that errors.Is(err, context.Canceled) holds; its Error method returns the wrapped exec
// error's text without checking it. That error is nil when the context ended while the
// process was being started (exec.Cmd.Start looked at the context before forking, terraform-exec
// after) or just after it exited successfully: formatting it then panics with a nil pointer
// dereference — it took a whole worker down. Such an error (one that unwraps to nil, yet is a
// context error) is replaced by the context's own error, which keeps errors.Is true and says
// what happened.
func settled(ctx context.Context, err error) error {
	u, ok := err.(interface{ Unwrap() error })
	if !ok || u.Unwrap() != nil {
		return err
	}
	if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	return context.Canceled // terraform-exec saw its context end: it was canceled
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
// "on … line …", code) are skipped. Terraform wraps a diagnostic's detail to its width: the
// last paragraph is unwrapped before its last line is taken, so that "Permission check failed
// (/vms/101, VM.Allocate)" is not cut to "VM.Allocate)".
func diagnostic(out string) string {
	var summary string
	var para, last []string // the paragraph being read, and the last one complete
	for _, raw := range strings.Split(out, "\n") {
		line := strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(raw), "│╷╵"))
		switch {
		case summary == "" && strings.HasPrefix(line, "Error: "):
			summary = strings.TrimPrefix(line, "Error: ")
		case summary == "":
		case strings.HasPrefix(line, "Error: ") || strings.HasPrefix(line, "Warning: "):
			return join(summary, lastLine(para, last)) // the next diagnostic
		case line == "" || strings.HasPrefix(line, "with ") || strings.HasPrefix(line, "on ") || isSourceLine(line):
			if len(para) > 0 {
				para, last = nil, para
			}
		default:
			para = append(para, line)
		}
	}
	return join(summary, lastLine(para, last))
}

// wrapWidth is the width Terraform wraps a diagnostic to when its output is not a terminal
// (78 columns), less the box drawing's margin.
const wrapWidth = 76

// lastLine returns the last line of the paragraph read last, its wrapping undone: a line
// joins the one before when its first word would not have fitted there. A provisioner's detail
// is "Error running command '<cmd>': exit status N. Output: <output>": what matters is the
// output.
func lastLine(para, last []string) string {
	if len(para) == 0 {
		para = last
	}
	var lines []string
	for i, l := range para {
		first, _, _ := strings.Cut(l, " ")
		if i > 0 && len(para[i-1])+1+len(first) > wrapWidth {
			lines[len(lines)-1] += " " + l
			continue
		}
		lines = append(lines, l)
	}
	if len(lines) == 0 {
		return ""
	}
	line := lines[len(lines)-1]
	if _, output, ok := strings.Cut(line, "Output: "); ok {
		line = strings.TrimSpace(output)
	}
	return line
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
