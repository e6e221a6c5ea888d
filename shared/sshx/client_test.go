package sshx_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"horizon/shared/horizon"
	"horizon/shared/sshx"
	"horizon/shared/sshx/sshxtest"
	"horizon/shared/testkit"
)

// config returns a Config that connects to srv with its pinned key.
func config(t testing.TB, srv *sshxtest.Server) sshx.Config {
	t.Helper()
	return sshx.Config{
		Addr:    srv.Addr,
		User:    "horizon",
		Signer:  sshxtest.NewKey(t),
		HostKey: srv.Fingerprint,
	}
}

// dial connects with cfg and closes the client when the test ends.
func dial(t testing.TB, cfg sshx.Config) *sshx.Client {
	t.Helper()
	c, err := sshx.Dial(context.Background(), cfg)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// silentListener accepts TCP connections and never says anything; accepted receives each one.
func silentListener(t testing.TB) (addr string, accepted <-chan net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	ch := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			ch <- c
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		for {
			select {
			case c := <-ch:
				_ = c.Close()
			default:
				return
			}
		}
	})
	return ln.Addr().String(), ch
}

func TestDial(t *testing.T) {
	t.Parallel()

	t.Run("ConnectsWithPinnedKey", func(t *testing.T) {
		t.Parallel()
		srv := sshxtest.Start(t, sshxtest.Options{})
		c := dial(t, config(t, srv))
		if err := c.Run(context.Background(), "true", sshx.RunOpts{}); err != nil {
			t.Fatalf("run: %v", err)
		}
	})

	t.Run("RejectsOtherHostKeyBeforeAuthentication", func(t *testing.T) {
		t.Parallel()
		srv := sshxtest.Start(t, sshxtest.Options{})
		cfg := config(t, srv)
		cfg.HostKey = ssh.FingerprintSHA256(sshxtest.NewKey(t).PublicKey())

		_, err := sshx.Dial(context.Background(), cfg)
		var hk *sshx.HostKeyError
		if !errors.As(err, &hk) {
			t.Fatalf("got %v, want a *HostKeyError", err)
		}
		if hk.Want != cfg.HostKey || hk.Got != srv.Fingerprint || hk.Addr != srv.Addr {
			t.Errorf("got %+v, want Addr %s, Want %s, Got %s", hk, srv.Addr, cfg.HostKey, srv.Fingerprint)
		}
		if msg := err.Error(); !strings.Contains(msg, cfg.HostKey) || !strings.Contains(msg, srv.Fingerprint) {
			t.Errorf("message %q does not name both fingerprints", msg)
		}
		testkit.Eventually(t, 5*time.Second, "server finishes the connection", func() bool { return srv.ConnsEnded() == 1 })
		if n := srv.AuthAttempts(); n != 0 {
			t.Errorf("server saw %d authentication attempts, want 0", n)
		}
	})

	t.Run("RefusesMissingOrMalformedPin", func(t *testing.T) {
		t.Parallel()
		srv := sshxtest.Start(t, sshxtest.Options{})
		for _, pin := range []string{"", "MD5:16:27:ac:a5:76:28:2d:36:63:1b:56:4d:eb:df:a6:48", "SHA256:tooshort", strings.TrimPrefix(srv.Fingerprint, "SHA256:")} {
			cfg := config(t, srv)
			cfg.HostKey = pin
			_, err := sshx.Dial(context.Background(), cfg)
			var ve *horizon.ValidationError
			if !errors.As(err, &ve) || len(ve.Fields) != 1 || ve.Fields[0].Field != "host_key" {
				t.Errorf("pin %q: got %v, want a validation error on host_key", pin, err)
			}
		}
		if n := srv.AuthAttempts(); n != 0 {
			t.Errorf("server saw %d authentication attempts, want 0", n)
		}
	})

	t.Run("ReportsEveryConfigProblem", func(t *testing.T) {
		t.Parallel()
		_, err := sshx.Dial(context.Background(), sshx.Config{DialTimeout: -1})
		var ve *horizon.ValidationError
		if !errors.As(err, &ve) {
			t.Fatalf("got %v, want a validation error", err)
		}
		var got []string
		for _, f := range ve.Fields {
			got = append(got, f.Field)
		}
		if want := "addr user signer host_key dial_timeout"; strings.Join(got, " ") != want {
			t.Errorf("got fields %v, want %s", got, want)
		}
	})

	t.Run("TimesOutAgainstSilentServer", func(t *testing.T) {
		t.Parallel()
		addr, _ := silentListener(t)
		srv := sshxtest.Start(t, sshxtest.Options{})
		cfg := config(t, srv)
		cfg.Addr = addr
		cfg.HandshakeTimeout = 200 * time.Millisecond

		start := time.Now()
		_, err := sshx.Dial(context.Background(), cfg)
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("got %v, want a handshake timeout", err)
		}
		if !strings.Contains(err.Error(), addr) {
			t.Errorf("error %q does not name the address", err)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("dial took %s, want about the 200ms handshake timeout", d)
		}
	})

	t.Run("StopsWhenContextEnds", func(t *testing.T) {
		t.Parallel()
		addr, accepted := silentListener(t)
		srv := sshxtest.Start(t, sshxtest.Options{})
		cfg := config(t, srv)
		cfg.Addr = addr
		cfg.HandshakeTimeout = time.Hour

		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			<-accepted // the handshake has started
			cancel()
		}()
		if _, err := sshx.Dial(ctx, cfg); !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v, want context.Canceled", err)
		}
	})

	t.Run("AsksForThePinnedKeyType", func(t *testing.T) {
		t.Parallel()
		ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatalf("generate: %v", err)
		}
		ec, err := ssh.NewSignerFromKey(ecKey)
		if err != nil {
			t.Fatalf("signer: %v", err)
		}
		// x/crypto prefers ECDSA to ed25519, so without a key type this server presents ec.
		srv := sshxtest.Start(t, sshxtest.Options{ExtraHostKeys: []ssh.Signer{ec}})
		cfg := config(t, srv) // pins the ed25519 key

		var hk *sshx.HostKeyError
		if _, err := sshx.Dial(context.Background(), cfg); !errors.As(err, &hk) || hk.Got != ssh.FingerprintSHA256(ec.PublicKey()) {
			t.Fatalf("without a key type: got %v, want a mismatch on the ECDSA key", err)
		}
		cfg.HostKeyType = srv.HostKey.Type()
		dial(t, cfg)
	})
}

func TestScanHostKey(t *testing.T) {
	t.Parallel()
	srv := sshxtest.Start(t, sshxtest.Options{})

	key, err := sshx.ScanHostKey(context.Background(), srv.Addr)
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	if got := ssh.FingerprintSHA256(key); got != srv.Fingerprint {
		t.Errorf("got %s, want %s", got, srv.Fingerprint)
	}
	testkit.Eventually(t, 5*time.Second, "server finishes the connection", func() bool { return srv.ConnsEnded() == 1 })
	if n := srv.AuthAttempts(); n != 0 {
		t.Errorf("scan made %d authentication attempts, want 0", n)
	}
}

func TestKeepalive(t *testing.T) {
	t.Parallel()
	srv := sshxtest.Start(t, sshxtest.Options{})
	cfg := config(t, srv)
	cfg.KeepaliveInterval = 50 * time.Millisecond
	cfg.KeepaliveCountMax = 2
	c := dial(t, cfg)

	// Answered keepalives keep the connection up.
	if err := c.Run(context.Background(), "true", sshx.RunOpts{}); err != nil {
		t.Fatalf("run: %v", err)
	}
	out := newNotifyingBuffer()
	ran := make(chan error, 1)
	go func() { ran <- c.Run(context.Background(), "echo started; sleep 30", sshx.RunOpts{Stdout: out}) }()
	out.waitFor(t, "started\n")

	srv.Freeze()
	waited := make(chan error, 1)
	go func() { waited <- c.Wait() }()
	select {
	case err := <-waited:
		if !errors.Is(err, sshx.ErrKeepalive) {
			t.Errorf("Wait: got %v, want ErrKeepalive", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("connection to a frozen server still up after 10s")
	}
	if err := <-ran; !errors.Is(err, sshx.ErrKeepalive) {
		t.Errorf("run in progress: got %v, want ErrKeepalive", err)
	}
	if err := c.Run(context.Background(), "true", sshx.RunOpts{}); !errors.Is(err, sshx.ErrKeepalive) {
		t.Errorf("run after: got %v, want ErrKeepalive", err)
	}
}

func TestClose(t *testing.T) {
	t.Parallel()
	srv := sshxtest.Start(t, sshxtest.Options{})
	c, err := sshx.Dial(context.Background(), config(t, srv))
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
	if err := c.Wait(); err != nil {
		t.Errorf("wait after close: %v", err)
	}
	if err := c.Run(context.Background(), "true", sshx.RunOpts{}); !errors.Is(err, net.ErrClosed) {
		t.Errorf("run after close: got %v, want net.ErrClosed", err)
	}
}
