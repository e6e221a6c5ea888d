// Command sandbox runs the Proxmox VE stand-in (package horizon/deploy/sandbox/pve) for the
// demo and for manual testing: it starts the clusters of a YAML config, prints how to reach
// them, writes the same as JSON to a state file for dev scripts, and runs until SIGINT or
// SIGTERM.
//
//	go run ./deploy/sandbox -config deploy/sandbox/demo.yaml -state .data/sandbox.json -data .data/sandbox
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"horizon/deploy/sandbox/pve"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "sandbox:", err)
		os.Exit(1)
	}
}

// run starts the sandbox the flags describe and serves until ctx ends.
func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("sandbox", flag.ContinueOnError)
	configPath := fs.String("config", "", "YAML config file (default: the built-in demo config)")
	statePath := fs.String("state", "", "write the endpoints, token and fingerprints as JSON to this file")
	dataDir := fs.String("data", "", "keep VM inventory, storage contents, host keys and certificates in this directory across restarts")
	latency := fs.Duration("latency", -1, "add this latency to every API call (overrides the config)")
	taskDuration := fs.Duration("task-duration", -1, "how long every task runs (overrides the config)")
	uploadMin := fs.Duration("upload-min-duration", -1, "hold every node SFTP upload open at least this long (overrides the config)")
	vmSSHPort := fs.Int("vm-ssh-port", -1, "port of the VMs' SSH servers (overrides the config; 0 = random)")
	adminToken := fs.String("admin-token", "", "token for the /sandbox/ admin endpoints (overrides the config)")
	verbose := fs.Bool("v", false, "log the sandbox's own diagnostics")
	if err := fs.Parse(args); err != nil {
		return err
	}

	cfg := pve.DefaultConfig()
	if *configPath != "" {
		var err error
		if cfg, err = pve.LoadConfig(*configPath); err != nil {
			return err
		}
	}
	if *latency >= 0 {
		cfg.Latency = *latency
	}
	if *taskDuration >= 0 {
		cfg.TaskDuration = *taskDuration
	}
	if *uploadMin >= 0 {
		cfg.UploadMinDuration = *uploadMin
	}
	if *vmSSHPort >= 0 {
		cfg.VMSSHPort = *vmSSHPort
	}
	if *adminToken != "" {
		cfg.AdminToken = *adminToken
	}
	if *dataDir != "" {
		abs, err := filepath.Abs(*dataDir)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(abs, 0o755); err != nil {
			return fmt.Errorf("create data dir: %w", err)
		}
		cfg.DataDir = abs
	}

	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	startCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	sb, err := pve.StartWithLogger(startCtx, cfg, log)
	cancel()
	if err != nil {
		return err
	}
	st := sb.State()
	printState(out, st)
	if *statePath != "" {
		if err := writeState(*statePath, st); err != nil {
			_ = sb.Close() // the write error is the one to report
			return err
		}
	}

	<-ctx.Done()
	fmt.Fprintln(out, "sandbox: shutting down")
	return sb.Close()
}

func printState(out io.Writer, st pve.State) {
	for _, c := range st.Clusters {
		fmt.Fprintf(out, "cluster %s\n", c.Name)
		fmt.Fprintf(out, "  api:         %s\n", c.APIURL)
		fmt.Fprintf(out, "  token:       %s=%s\n", c.TokenID, c.TokenSecret)
		fmt.Fprintf(out, "  fingerprint: %s\n", c.CertFingerprint)
		for _, n := range c.Nodes {
			fmt.Fprintf(out, "  node %-8s ssh root@%s  host key %s\n", n.Name, n.SSHAddr, n.HostKeyFingerprint)
		}
	}
	if st.AdminToken != "" {
		fmt.Fprintf(out, "admin: Authorization: Bearer %s on <api host>/sandbox/…\n", st.AdminToken)
	}
}

func writeState(path string, st pve.State) error {
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create state dir: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("write state: %w", err)
	}
	return os.Rename(tmp, path)
}
