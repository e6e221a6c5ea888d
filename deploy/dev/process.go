package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"horizon/shared/auth"
)

// processes are the children dev started; they are stopped, in reverse order, on the way out.
type processes struct {
	mu      sync.Mutex
	cmds    []*exec.Cmd
	stops   []func()
	exited  chan error
	stopped bool
}

func (p *processes) onStop(f func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stops = append(p.stops, f)
}

// start runs a child whose output is prefixed with name. A child that exits on its own is
// reported on p.exited.
func (p *processes) start(ctx context.Context, name string, env []string, bin string, args ...string) error {
	p.mu.Lock()
	if p.exited == nil {
		p.exited = make(chan error, 8)
	}
	p.mu.Unlock()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	// Own process group (a terminal Ctrl-C reaches only dev, which stops children in order), and
	// SIGTERM if dev dies without doing so.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", name, err)
	}
	go prefixLines(name, out)
	p.mu.Lock()
	p.cmds = append(p.cmds, cmd)
	p.mu.Unlock()
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		stopped := p.stopped
		p.mu.Unlock()
		if !stopped {
			p.exited <- fmt.Errorf("%s exited: %v", name, err)
		}
	}()
	return nil
}

func (p *processes) stopAll() {
	p.mu.Lock()
	p.stopped = true
	cmds, stops := p.cmds, p.stops
	p.mu.Unlock()
	for i := len(cmds) - 1; i >= 0; i-- {
		c := cmds[i]
		_ = syscall.Kill(-c.Process.Pid, syscall.SIGTERM) // the child may already be gone
		done := make(chan struct{})
		go func() { _, _ = c.Process.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		}
	}
	for i := len(stops) - 1; i >= 0; i-- {
		stops[i]()
	}
}

func prefixLines(name string, r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		fmt.Printf("%-8s| %s\n", name, sc.Text())
	}
}

// build compiles one of the repository's commands.
func build(ctx context.Context, root, pkg, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "./"+pkg)
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("build %s: %w", pkg, err)
	}
	return nil
}

func waitReady(ctx context.Context, url string, timeout time.Duration) error {
	client := &http.Client{Timeout: 2 * time.Second}
	err := waitFor(ctx, timeout, func() bool {
		res, err := client.Get(url)
		if err != nil {
			return false
		}
		_ = res.Body.Close()
		return res.StatusCode == http.StatusOK
	})
	if err != nil {
		return errors.New("the API did not become ready; see its log above")
	}
	return nil
}

// readOrCreate returns the trimmed contents of path, creating it (mode 0600) with make() first.
func readOrCreate(path string, make func() string) (string, error) {
	if b, err := os.ReadFile(path); err == nil {
		return strings.TrimSpace(string(b)), nil
	}
	v := make()
	if err := os.WriteFile(path, []byte(v+"\n"), 0o600); err != nil {
		return "", err
	}
	return v, nil
}

func newSecretKey() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand does not fail on Linux
	return base64.StdEncoding.EncodeToString(b)
}

func newAdminToken() string { return auth.NewToken().Reveal() }
