package sshx

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
)

// DefaultKillGrace is how long Run waits after TERM before it sends KILL, when RunOpts.KillGrace
// is zero.
const DefaultKillGrace = 10 * time.Second

// RunOpts are the optional parts of a Run.
type RunOpts struct {
	// Env is set in the command's environment with "env" requests, in name order. The server must
	// accept every name (OpenSSH: sshd_config AcceptEnv); a refused name fails Run.
	Env map[string]string
	// Stdin, when set, is copied to the command's standard input until it returns EOF. As with
	// os/exec, the copier may still be blocked in one Read of Stdin when Run returns.
	Stdin io.Reader
	// Stdout and Stderr receive the command's output as it arrives. Nil discards. When both are
	// the same writer, Run serialises the writes, as os/exec does. Neither is written to after
	// Run returns.
	Stdout io.Writer
	Stderr io.Writer
	// KillGrace is how long a cancelled command has between TERM and KILL. Default
	// DefaultKillGrace.
	KillGrace time.Duration
}

// ExitError reports that the command ran and did not exit 0. Status is the exit status; when the
// command was killed by a signal, Signal names it ("KILL", "TERM") and Status is 128 plus the
// signal number, as a shell reports it.
type ExitError struct {
	Status int
	Signal string
}

func (e *ExitError) Error() string {
	if e.Signal != "" {
		return fmt.Sprintf("command killed by signal %s", e.Signal)
	}
	return fmt.Sprintf("command exited with status %d", e.Status)
}

// Run runs cmd on the server and waits for it to finish. It returns nil for exit status 0, an
// *ExitError for another status, and an error naming the address for anything that kept the
// command from running or finishing (a refused environment variable, a lost connection). When ctx
// ends first, Run sends TERM, then KILL after opts.KillGrace, closes the session and returns
// ctx.Err() — without waiting for a command that ignores both. The error never contains cmd or
// environment values.
func (c *Client) Run(ctx context.Context, cmd string, opts RunOpts) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s, err := c.conn.NewSession()
	if err != nil {
		return c.runErr("open session", err)
	}
	// Close after exit reports io.EOF; the session carries nothing left to flush.
	defer func() { _ = s.Close() }()

	for _, name := range slices.Sorted(maps.Keys(opts.Env)) {
		if err := s.Setenv(name, opts.Env[name]); err != nil {
			return c.runErr("set environment variable "+name+" (the server must accept it: sshd AcceptEnv)", err)
		}
	}
	s.Stdin = opts.Stdin
	// The session's copiers may outlive Run when the server does not close a cancelled channel;
	// cutting the writers guarantees the caller's writers see no Write once Run has returned.
	stdout, stderr := cuttable(opts.Stdout), cuttable(opts.Stderr)
	if opts.Stdout != nil && sameWriter(opts.Stdout, opts.Stderr) {
		stderr = stdout // one writer: serialise its two copiers, as os/exec does
	}
	defer stdout.cut()
	defer stderr.cut()
	s.Stdout, s.Stderr = stdout, stderr
	if err := s.Start(cmd); err != nil {
		return c.runErr("start command", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- s.Wait() }()

	select {
	case err := <-exited:
		return c.exitErr(err)
	case <-ctx.Done():
	}
	grace := opts.KillGrace
	if grace <= 0 {
		grace = DefaultKillGrace
	}
	// Signal errors mean the channel is already gone, which is what we are after anyway.
	_ = s.Signal(ssh.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-exited:
	case <-t.C:
		_ = s.Signal(ssh.SIGKILL)
	}
	return ctx.Err()
}

func (c *Client) exitErr(err error) error {
	var ee *ssh.ExitError
	var missing *ssh.ExitMissingError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ee):
		return &ExitError{Status: ee.ExitStatus(), Signal: ee.Signal()}
	case errors.As(err, &missing):
		// Mostly what a dropped connection looks like from the session's side, seen a moment
		// before the connection's own watcher notices: give it time to say so.
		if cause := c.broken(time.Second); cause != nil {
			return fmt.Errorf("run on %s: %w", c.addr, cause)
		}
		return c.runErr("command ended without an exit status", err)
	default:
		return c.runErr("wait for command", err)
	}
}

// runErr wraps err from operation op, preferring the connection's failure when it is gone.
func (c *Client) runErr(op string, err error) error {
	if cause := c.broken(0); cause != nil {
		return fmt.Errorf("run on %s: %s: %w", c.addr, op, cause)
	}
	return fmt.Errorf("run on %s: %s: %w", c.addr, op, err)
}

// cutWriter forwards writes to w until cut, then discards them. Writes are serialised.
type cutWriter struct {
	mu  sync.Mutex
	w   io.Writer
	off bool
}

func cuttable(w io.Writer) *cutWriter {
	if w == nil {
		w = io.Discard
	}
	return &cutWriter{w: w}
}

func (c *cutWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.off {
		return len(p), nil
	}
	return c.w.Write(p)
}

// cut returns once no Write is in progress; later writes are discarded.
func (c *cutWriter) cut() {
	c.mu.Lock()
	c.off = true
	c.mu.Unlock()
}

// sameWriter reports whether a and b are the same writer. Writers whose dynamic type is not
// comparable are never the same (comparing them would panic).
func sameWriter(a, b io.Writer) (same bool) {
	defer func() { _ = recover() }()
	return a == b
}
