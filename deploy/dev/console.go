package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"horizon/deploy/web"
)

// buildConsole builds the web console (deploy/web) into deploy/web/dist: `npm ci` when its
// node_modules is missing or older than package-lock.json, then `npm run build`. Without npm
// on the machine it returns errNoNode, and dev runs the API alone.
func buildConsole(ctx context.Context, root string) (string, error) {
	web := filepath.Join(root, "deploy", "web")
	if _, err := exec.LookPath("npm"); err != nil {
		return "", errNoNode
	}
	lock, err := os.Stat(filepath.Join(web, "package-lock.json"))
	if err != nil {
		return "", err
	}
	installed, err := os.Stat(filepath.Join(web, "node_modules", ".package-lock.json"))
	if err != nil || installed.ModTime().Before(lock.ModTime()) {
		if err := npm(ctx, web, "ci", "--no-audit", "--no-fund"); err != nil {
			return "", err
		}
	}
	if err := npm(ctx, web, "run", "build"); err != nil {
		return "", err
	}
	return filepath.Join(web, "dist"), nil
}

var errNoNode = errors.New("npm is not installed")

func npm(ctx context.Context, dir string, args ...string) error {
	cmd := exec.CommandContext(ctx, "npm", args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("npm %v in %s: %w", args, dir, err)
	}
	return nil
}

// serveConsole serves the built console on its own origin, as a CDN would (web.Handler: the
// production headers, a config.json that points it at the API, which allows that origin
// through HORIZON_CORS_ORIGINS).
func serveConsole(ctx context.Context, dist, listen, apiURL string) error {
	h, err := web.Handler(dist, apiURL)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("console: %w", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	return nil
}
