package gitsource

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// maxStderr bounds what is kept of a git command's standard error.
const maxStderr = 16 << 10

// baseEnv is the whole environment of every git command: nothing is inherited but PATH, so no
// user or system configuration, credential helper, trace variable or agent socket can change
// what git does or leak what it is given.
func (c *Cache) baseEnv() []string {
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + c.homeDir(),
		"LC_ALL=C",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_CEILING_DIRECTORIES=" + c.cfg.Dir,
		"GIT_TERMINAL_PROMPT=0",
		// Only these transports, for the URL and anything it leads to (ext:: runs commands).
		"GIT_ALLOW_PROTOCOL=file:https:ssh",
	}
}

// gitConfig turns key/value pairs into GIT_CONFIG_COUNT/KEY/VALUE variables: configuration
// that never appears on a command line (where ps would show it).
func gitConfig(kv ...string) []string {
	env := []string{"GIT_CONFIG_COUNT=" + strconv.Itoa(len(kv)/2)}
	for i := 0; i+1 < len(kv); i += 2 {
		n := strconv.Itoa(i / 2)
		env = append(env, "GIT_CONFIG_KEY_"+n+"="+kv[i], "GIT_CONFIG_VALUE_"+n+"="+kv[i+1])
	}
	return env
}

// gitError is a git command that failed. Its message holds git's standard error with every
// credential removed.
type gitError struct {
	op     string
	stderr string
	err    error
}

func (e *gitError) Error() string {
	msg := summary(e.stderr)
	if msg == "" {
		msg = e.err.Error()
	}
	return fmt.Sprintf("git %s: %s", e.op, msg)
}

func (e *gitError) Unwrap() error { return e.err }

// git runs one git command with env, bounded by Config.Timeout, and returns its standard
// output. A failure is a *gitError whose text went through redact; when the caller's ctx ends
// first, the error wraps ctx's error; when the timeout fires, it wraps ErrUnreachable.
func (c *Cache) git(ctx context.Context, env []string, redact func(string) string, args ...string) ([]byte, error) {
	run, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	cmd := exec.CommandContext(run, c.cfg.Git, args...)
	cmd.Env = env
	cmd.Dir = c.homeDir() // never inside a repository git could discover
	var stdout bytes.Buffer
	stderr := &limitedBuffer{max: maxStderr}
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	// git runs ssh, remote helpers and upload-pack as children: kill the whole group, and do
	// not wait forever on pipes an orphan keeps open.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	if err == nil {
		return stdout.Bytes(), nil
	}
	op := args[0]
	if strings.HasPrefix(op, "--git-dir") && len(args) > 1 {
		op = args[1]
	}
	switch {
	case ctx.Err() != nil:
		err = ctx.Err()
	case errors.Is(run.Err(), context.DeadlineExceeded):
		err = fmt.Errorf("%w: no answer within %s", ErrUnreachable, c.cfg.Timeout)
	}
	return nil, &gitError{op: op, stderr: redact(stderr.String()), err: err}
}

// classify wraps err with the sentinel its standard error reveals, or returns it as it is.
// Messages are git's, OpenSSH's and libcurl's in the C locale.
func classify(err error) error {
	var ge *gitError
	if !errors.As(err, &ge) || errors.Is(err, ErrUnreachable) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	for _, c := range classes {
		if c.re.MatchString(ge.stderr) {
			return fmt.Errorf("%w: %w", c.err, err)
		}
	}
	return err
}

var classes = []struct {
	re  *regexp.Regexp
	err error
}{
	{regexp.MustCompile(`(?i)host key verification failed|remote host identification has changed|no \S+ host key is known`), ErrHostKey},
	{regexp.MustCompile(`(?i)permission denied|authentication failed|could not read (username|password)|terminal prompts disabled|access denied|returned error: 40[13]|invalid credentials`), ErrAuth},
	{regexp.MustCompile(`(?i)repository not found|repository '[^']*' not found|does not appear to be a git repository|returned error: 404|not a git repository`), ErrRepoNotFound},
	{regexp.MustCompile(`(?i)not our ref|couldn't find remote ref|no such remote ref|unadvertised object`), ErrCommitNotFound},
	{regexp.MustCompile(`(?i)could not resolve|connection refused|timed out|network is unreachable|no route to host|failed to connect|connection reset|connection closed|unable to access|ssl|certificate|early eof|could not read from remote repository`), ErrUnreachable},
}

// limitedBuffer keeps the first max bytes written to it and drops the rest.
type limitedBuffer struct {
	buf bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (b *limitedBuffer) String() string { return b.buf.String() }

// summary keeps what matters of git's standard error: its fatal: and error: lines (the first
// three), or else its last line.
func summary(stderr string) string {
	var picked []string
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	for _, l := range lines {
		if strings.HasPrefix(l, "fatal: ") || strings.HasPrefix(l, "error: ") {
			picked = append(picked, strings.TrimSpace(l))
		}
	}
	if len(picked) == 0 {
		picked = lines[len(lines)-1:]
	}
	return strings.Join(picked[:min(len(picked), 3)], "; ")
}
