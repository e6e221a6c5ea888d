// Command functions serves Horizon's HTTP API. Every endpoint is a small stateless function:
// authenticate, validate, read and write Postgres in one transaction, enqueue work for the
// workers, answer. It never runs Terraform, scripts or anything slow itself. The one exception
// is registration: adding or editing a Proxmox or Nagios server dials its SSH once, bounded by
// the request's deadline, to check the pinned host key and the credentials before saving them,
// so that an admin learns at once what is wrong instead of from a failed build later.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"

	"horizon/functions/app"
	"horizon/shared/config"
)

func main() {
	cfg, err := config.Load(os.LookupEnv)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	log := cfg.Logger(os.Stderr)
	if err := run(cfg, log); err != nil {
		log.Error("api stopped", "error", err)
		os.Exit(1)
	}
}

func run(cfg config.Config, log *slog.Logger) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	api, err := app.Open(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer api.Close()
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return err
	}
	log.Info("api listening", "url", "http://"+cfg.Listen)
	err = api.Serve(ctx, ln)
	log.Info("api stopped serving")
	return err
}
