package nagios

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"horizon/shared/sshx"
)

// Debian's defaults for a registered server's file side.
const (
	DefaultConfigDir     = "/etc/nagios4/conf.d/horizon"
	DefaultVerifyCommand = "/usr/sbin/nagios4 -v /etc/nagios4/nagios.cfg"
	DefaultReloadCommand = "systemctl reload nagios4"
)

// Target is where and how Publish writes: an SSH endpoint, the directory Horizon owns and the
// commands that verify the configuration and reload Nagios.
type Target struct {
	SSH    sshx.Config
	Dir    string
	Verify string
	Reload string
}

// VerifyError reports that Nagios refused the configuration; Line is Nagios's own error line.
// The previous file was put back.
type VerifyError struct{ Line string }

func (e *VerifyError) Error() string { return "nagios refused the configuration: " + e.Line }

// Publish writes contents as the file name in t.Dir (nil contents remove it), verifies the
// configuration and reloads Nagios; a refused configuration is rolled back (see the package doc).
func Publish(ctx context.Context, t Target, name string, contents []byte) error {
	c, err := sshx.Dial(ctx, t.SSH)
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }() // nothing buffered: every operation has finished
	return publish(ctx, c, t, name, contents)
}

func publish(ctx context.Context, c *sshx.Client, t Target, name string, contents []byte) error {
	file := path.Join(t.Dir, name)
	previous, err := c.ReadFile(ctx, file, 0)
	existed := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if contents == nil && !existed {
		return nil // nothing published, nothing to remove
	}
	if err := c.MkdirAll(ctx, t.Dir); err != nil {
		return err
	}
	if err := put(ctx, c, file, contents); err != nil {
		return err
	}
	if line, err := Verify(ctx, c, t.Verify); err != nil {
		var restore []byte
		if existed {
			restore = previous
		}
		if rerr := put(context.WithoutCancel(ctx), c, file, restore); rerr != nil {
			return fmt.Errorf("%w; putting the previous %s back failed too: %v", err, file, rerr)
		}
		if line != "" {
			return &VerifyError{Line: line}
		}
		return err
	}
	var out bytes.Buffer
	if err := c.Run(ctx, t.Reload, sshx.RunOpts{Stdout: &out, Stderr: &out}); err != nil {
		return fmt.Errorf("reload nagios: %w: %s", err, lastLine(out.String()))
	}
	return nil
}

// put writes contents as file, or removes file when contents is nil.
func put(ctx context.Context, c *sshx.Client, file string, contents []byte) error {
	if contents == nil {
		if err := c.Remove(ctx, file); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	return c.Upload(ctx, file, bytes.NewReader(contents), 0o644)
}

// Verify runs the verify command; when Nagios refuses the configuration it returns its first
// error line with the error.
func Verify(ctx context.Context, c *sshx.Client, cmd string) (string, error) {
	var out bytes.Buffer
	err := c.Run(ctx, cmd, sshx.RunOpts{Stdout: &out, Stderr: &out})
	var exit *sshx.ExitError
	if err == nil || !errors.As(err, &exit) {
		return "", err
	}
	return errorLine(out.String()), fmt.Errorf("verify the configuration: %w", err)
}

// errorLine picks the line of nagios -v's output that says what is wrong.
func errorLine(out string) string {
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "Error:") {
			return l
		}
	}
	return lastLine(out)
}

func lastLine(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// CheckReload checks, without reloading Nagios, that the reload command can run: that its
// program (the command's first word) is one the login shell finds (`command -v`).
func CheckReload(ctx context.Context, c *sshx.Client, cmd string) error {
	words := strings.Fields(cmd)
	if len(words) == 0 {
		return errors.New("is empty")
	}
	var out bytes.Buffer
	err := c.Run(ctx, "command -v -- '"+strings.ReplaceAll(words[0], "'", `'\''`)+"'", sshx.RunOpts{Stdout: &out, Stderr: &out})
	var exit *sshx.ExitError
	if errors.As(err, &exit) {
		return fmt.Errorf("%s is not a command on the Nagios host", words[0])
	}
	return err
}
