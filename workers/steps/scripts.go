package steps

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"horizon/shared/cloudinit"
	"horizon/shared/gitcred"
	"horizon/shared/sshx"
	"horizon/shared/template"
	"horizon/workers/attempt"
)

// scripted is what scripts emitted through $HORIZON_OUTPUT and $HORIZON_SECRET_OUTPUT.
type scripted struct {
	outputs map[string]any
	secrets map[string]string
}

// runScripts runs scripts (the job's scripts or its cleanup scripts) on the execution's machine,
// in order, over SSH with the machine's pinned host key and Horizon's deploy key.
//
// Each script is written to a file on the machine (its stdin carries it, so values never appear
// in a command line) and run with bash, with the HORIZON_* variables, the parameters and the
// inputs exported. A marker file per step and script makes a redelivered attempt skip what
// already ran.
func (h *Handler) runScripts(ctx context.Context, w *stepWork, out *attempt.Log, outputs map[string]any, scripts []template.Script, kind string) (scripted, error) {
	res := scripted{outputs: map[string]any{}, secrets: map[string]string{}}
	c, ip, err := h.dialMachine(ctx, w, outputs, out)
	if err != nil {
		return res, err
	}
	defer c.Close()
	tree, err := h.tree(ctx, w)
	if err != nil {
		return res, err
	}
	dir := fmt.Sprintf(".horizon/%s", w.Step.ID)
	for _, s := range scripts {
		body, err := fs.ReadFile(os.DirFS(tree), path.Join(w.job.Source.Path, s.Path))
		if err != nil {
			return res, fmt.Errorf("%s %s: read %s at commit %s: %w", kind, s.Name, s.Path, shortCommit(w.exec.Commit), err)
		}
		marker := dir + "/done-" + s.Name
		if ran, err := remoteTest(ctx, c, marker); err != nil {
			return res, err
		} else if ran {
			out.Say("%s %s already ran in an earlier attempt of this step; not running it again", kind, s.Name)
			continue
		}
		out.Say("running %s %s (%s)", kind, s.Name, s.Path)
		lines := newScriptLog(ctx, out, w.Masker, func(ctx context.Context) (map[string]string, error) {
			return readOutputFile(ctx, c, dir, "secret-outputs")
		})
		stdout, stderr := &lineWriter{log: lines, masker: w.Masker, fd: "stdout"}, &lineWriter{log: lines, masker: w.Masker, fd: "stderr"}
		script := preamble(w, dir, ip) + string(body)
		cmd := fmt.Sprintf(`umask 077 && mkdir -p "$HOME/%[1]s" && cat > "$HOME/%[1]s/%[2]s.sh" && cd "$HOME" && bash "$HOME/%[1]s/%[2]s.sh" < /dev/null && touch "$HOME/%[3]s"`,
			dir, s.Name, marker)
		err = c.Run(ctx, cmd, sshx.RunOpts{Stdin: strings.NewReader(script), Stdout: stdout, Stderr: stderr})
		stdout.Flush()
		stderr.Flush()
		lines.close() // after a last read of the secret outputs: the error below is masked with them
		var exit *sshx.ExitError
		if errors.As(err, &exit) && stderr.last != "" {
			// What the script said last on stderr comes first: it is what a failed card shows.
			return res, fmt.Errorf("%s (%s %s exited with status %d)", strings.TrimSpace(stderr.last), kind, s.Name, exit.Status)
		}
		if errors.As(err, &exit) {
			return res, fmt.Errorf("%s %s exited with status %d", kind, s.Name, exit.Status)
		}
		if err != nil {
			return res, fmt.Errorf("%s %s: %w", kind, s.Name, err)
		}
	}
	if err := readOutputs(ctx, c, dir, &res); err != nil {
		return res, err
	}
	for _, v := range res.secrets {
		w.Masker.Add(v)
	}
	return res, nil
}

// preamble exports what a script may read: HORIZON_* variables, then every parameter and
// input under its own name (shell-quoted).
func preamble(w *stepWork, dir, ip string) string {
	var b strings.Builder
	b.WriteString("# Written by Horizon.\n")
	env := map[string]string{
		"HORIZON_OUTPUT":        "$HOME/" + dir + "/outputs",
		"HORIZON_SECRET_OUTPUT": "$HOME/" + dir + "/secret-outputs",
	}
	fixed := map[string]string{
		"HORIZON_STACK_ID":  w.stack.ID.String(),
		"HORIZON_STACK":     w.stack.Name,
		"HORIZON_JOB":       w.exec.Job,
		"HORIZON_EXECUTION": strconv.Itoa(w.exec.Index),
		"HORIZON_RUN_ID":    w.Run.ID.String(),
		"HORIZON_NAME":      vmName(w),
		"HORIZON_IP":        ip,
	}
	for _, k := range sortedKeys(env) {
		fmt.Fprintf(&b, "export %s=\"%s\"\n", k, env[k]) // expands $HOME on the machine
	}
	for _, k := range sortedKeys(fixed) {
		fmt.Fprintf(&b, "export %s=%s\n", k, shellQuote(fixed[k]))
	}
	vars := map[string]string{}
	for k, v := range w.effective.Parameters {
		vars[k] = stringValue(v)
	}
	for k, v := range w.effective.Inputs {
		vars[k] = stringValue(v)
	}
	for _, k := range sortedKeys(vars) {
		fmt.Fprintf(&b, "export %s=%s\n", k, shellQuote(vars[k]))
	}
	b.WriteString(": > \"$HORIZON_OUTPUT\"; : > \"$HORIZON_SECRET_OUTPUT\"\n")
	return b.String()
}

// dialMachine connects to the execution's machine, waiting for it to boot: its address is the
// module's "ip" output (or the attached address), its port "ssh_port" (or the workers'
// HORIZON_VM_SSH_PORT, 22 by default).
func (h *Handler) dialMachine(ctx context.Context, w *stepWork, outputs map[string]any, out *attempt.Log) (*sshx.Client, string, error) {
	host := ""
	if ip, ok := outputs["ip"]; ok {
		host = stringValue(ip)
	} else if w.address != nil {
		host = w.address.IP.String()
	}
	if host == "" {
		return nil, "", errors.New("the job has scripts but its module has no \"ip\" output and no address is attached")
	}
	port := "22"
	if h.VMSSHPort > 0 {
		port = strconv.Itoa(h.VMSSHPort)
	}
	if p, ok := outputs["ssh_port"]; ok {
		port = stringValue(p)
	}
	if w.exec.HostKeyFingerprint == nil {
		return nil, "", errors.New("the machine has no pinned host key (it was not built by Horizon's cloud-init)")
	}
	signer, _, err := h.deployKey(ctx)
	if err != nil {
		return nil, "", err
	}
	cfg := sshx.Config{Addr: net.JoinHostPort(host, port), User: cloudinit.DefaultUser, Signer: signer, HostKey: *w.exec.HostKeyFingerprint,
		DialTimeout: 5 * time.Second}
	deadline := time.Now().Add(h.ScriptSSHTimeout)
	logged := false
	for {
		c, err := sshx.Dial(ctx, cfg)
		if err == nil {
			// A machine that has just booted may drop its first connections (cloud-init restarts
			// sshd once it has written the host keys): a command that could not even start ran
			// nothing, so the connection is tried with one before the scripts use it.
			if err = c.Run(ctx, "true", sshx.RunOpts{}); err != nil {
				_ = c.Close()
				var exit *sshx.ExitError
				if errors.As(err, &exit) {
					return nil, "", err
				}
			}
		}
		var hk *sshx.HostKeyError
		switch {
		case err == nil:
			out.Say("connected to the machine's SSH at %s", cfg.Addr)
			return c, host, nil
		case errors.As(err, &hk), ctx.Err() != nil:
			return nil, "", err // a wrong key is not a machine still booting
		case time.Now().After(deadline):
			return nil, "", fmt.Errorf("the machine's SSH at %s did not answer within %s: %w", cfg.Addr, h.ScriptSSHTimeout, err)
		}
		if !logged {
			out.Say("waiting for the machine's SSH at %s", cfg.Addr)
			logged = true
		}
		select {
		case <-ctx.Done():
			return nil, "", ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// tree returns the read-only checkout of the execution's pinned commit.
func (h *Handler) tree(ctx context.Context, w *stepWork) (string, error) {
	return h.checkout(ctx, w.job.Source.Repo, w.exec.Commit)
}

// checkout returns the read-only checkout of repo at commit. The repository's credentials are
// read (a query) only when this host's git cache does not have the commit yet: after a host's
// first step of a template version — or its preparation at publish — most steps need none.
func (h *Handler) checkout(ctx context.Context, repo, commit string) (string, error) {
	if dir, ok := h.Git.Cached(repo, commit); ok {
		return dir, nil
	}
	creds, err := gitcred.For(ctx, h.DB, h.Box, []string{repo})
	if err != nil {
		return "", err
	}
	return h.Git.Tree(ctx, repo, commit, creds[repo])
}

// remoteTest reports whether a file exists on the machine.
func remoteTest(ctx context.Context, c *sshx.Client, file string) (bool, error) {
	err := c.Run(ctx, fmt.Sprintf(`test -e "$HOME/%s"`, file), sshx.RunOpts{})
	var exit *sshx.ExitError
	if errors.As(err, &exit) {
		return false, nil
	}
	return err == nil, err
}

// readOutputs collects key=value lines the scripts wrote; the contents never reach the log.
func readOutputs(ctx context.Context, c *sshx.Client, dir string, res *scripted) error {
	outputs, err := readOutputFile(ctx, c, dir, "outputs")
	if err != nil {
		return err
	}
	for k, v := range outputs {
		res.outputs[k] = v
	}
	res.secrets, err = readOutputFile(ctx, c, dir, "secret-outputs")
	return err
}

// Limits on what scripts emit: outputs are stored on the execution and served by the API, so
// a runaway script must not fill them (the template author's guide states them).
const (
	maxOutputValue = 64 << 10  // bytes of one value
	maxOutputFile  = 256 << 10 // bytes of one output file, so of all of an execution's outputs of a kind
	maxOutputs     = 100       // outputs of one kind
)

// readOutputFile reads one of the scripts' output files ($HORIZON_OUTPUT, $HORIZON_SECRET_OUTPUT)
// as key=value lines; a file not written yet is empty. It reads at most maxOutputFile bytes
// and fails beyond.
func readOutputFile(ctx context.Context, c *sshx.Client, dir, name string) (map[string]string, error) {
	var buf bytes.Buffer
	cmd := fmt.Sprintf(`head -c %d "$HOME/%s/%s" 2>/dev/null || true`, maxOutputFile+1, dir, name)
	if err := c.Run(ctx, cmd, sshx.RunOpts{Stdout: &buf}); err != nil {
		return nil, fmt.Errorf("read script outputs: %w", err)
	}
	if buf.Len() > maxOutputFile {
		return nil, fmt.Errorf("the scripts wrote more than %d KiB of outputs to %s, the limit", maxOutputFile>>10, outputVar(name))
	}
	out := map[string]string{}
	for _, line := range strings.Split(buf.String(), "\n") {
		k, v, ok := strings.Cut(strings.TrimRight(line, "\r"), "=")
		if k = strings.TrimSpace(k); ok && k != "" {
			out[k] = v
		}
	}
	return out, nil
}

func outputVar(file string) string {
	if file == "secret-outputs" {
		return "$HORIZON_SECRET_OUTPUT"
	}
	return "$HORIZON_OUTPUT"
}

// checkOutputs holds what the scripts emitted to the declaration (a job's or a script action's) and the limits: every
// output declared, a secret one written to $HORIZON_SECRET_OUTPUT (and only a secret one), no
// value over maxOutputValue, no more than maxOutputs of a kind.
func checkOutputs(outputs []template.ScriptOutput, res scripted) error {
	declared := map[string]template.ScriptOutput{}
	for _, o := range outputs {
		declared[o.Name] = o
	}
	var undeclared []string
	check := func(name string, value string, secret bool) error {
		o, ok := declared[name]
		switch {
		case !ok:
			undeclared = append(undeclared, truncate(name, 64))
		case o.Secret && !secret:
			return fmt.Errorf("the scripts wrote the secret output %s to $HORIZON_OUTPUT; write it to $HORIZON_SECRET_OUTPUT", name)
		case !o.Secret && secret:
			return fmt.Errorf("the scripts wrote output %s to $HORIZON_SECRET_OUTPUT, but the template does not declare it secret", name)
		case len(value) > maxOutputValue:
			return fmt.Errorf("output %s is %d KiB, over the limit of %d KiB per value", name, len(value)>>10, maxOutputValue>>10)
		}
		return nil
	}
	if len(res.outputs) > maxOutputs || len(res.secrets) > maxOutputs {
		return fmt.Errorf("the scripts emitted %d outputs and %d secret outputs, over the limit of %d of each", len(res.outputs), len(res.secrets), maxOutputs)
	}
	for _, k := range sortedKeys(res.secrets) {
		if err := check(k, res.secrets[k], true); err != nil {
			return err
		}
	}
	for k, v := range res.outputs {
		if err := check(k, stringValue(v), false); err != nil {
			return err
		}
	}
	if len(undeclared) > 0 {
		sort.Strings(undeclared)
		return fmt.Errorf("the scripts emitted outputs the template does not declare: %s (declare them under the job's or the action's outputs)",
			strings.Join(undeclared[:min(len(undeclared), 5)], ", "))
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
