package sshx_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"horizon/shared/sshx"
	"horizon/shared/sshx/sshxtest"
	"horizon/shared/testkit"
)

// tempFiles returns the names of Upload's temporary files in dir.
func tempFiles(t testing.TB, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("read dir: %v", err)
	}
	var names []string
	for _, e := range entries {
		if strings.Contains(e.Name(), ".horizon-") {
			names = append(names, e.Name())
		}
	}
	return names
}

func readFile(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	return string(b)
}

func TestUpload(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct {
		name string
		hide []string
	}{
		{name: "ReplacesAtomicallyWithPosixRename"},
		{name: "ReplacesWithPlainRename", hide: []string{"posix-rename@openssh.com"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := sshxtest.Start(t, sshxtest.Options{HideSFTPExtensions: tc.hide})
			c := dial(t, config(t, srv))
			dir := t.TempDir()
			target := filepath.Join(dir, "user-data.yaml")
			if err := os.WriteFile(target, []byte("old"), 0o600); err != nil {
				t.Fatalf("seed: %v", err)
			}
			// pkg/sftp writes in packets of 32 KiB, and fills a packet before sending it.
			first, rest := bytes.Repeat([]byte("a"), 2*32<<10), bytes.Repeat([]byte("b"), 1000)

			pr, pw := io.Pipe()
			uploaded := make(chan error, 1)
			go func() { uploaded <- c.Upload(context.Background(), target, pr, 0o640) }()
			if _, err := pw.Write(first); err != nil {
				t.Fatalf("write: %v", err)
			}
			// Half-way: the bytes sit in a temporary file; the target is untouched.
			testkit.Eventually(t, 5*time.Second, "first half lands in a temporary file", func() bool {
				names := tempFiles(t, dir)
				return len(names) == 1 && len(readFile(t, filepath.Join(dir, names[0]))) == len(first)
			})
			if got := readFile(t, target); got != "old" {
				t.Fatalf("target mid-upload is %q, want the old contents", got)
			}
			tmp := tempFiles(t, dir)[0]
			if !strings.HasPrefix(tmp, ".user-data.yaml.horizon-") {
				t.Errorf("temporary name %q, want a hidden name derived from the target", tmp)
			}
			if _, err := pw.Write(rest); err != nil {
				t.Fatalf("write: %v", err)
			}
			_ = pw.Close()
			if err := <-uploaded; err != nil {
				t.Fatalf("upload: %v", err)
			}

			if got, want := readFile(t, target), string(first)+string(rest); got != want {
				t.Errorf("target has %d bytes, want %d", len(got), len(want))
			}
			fi, err := os.Stat(target)
			if err != nil {
				t.Fatalf("stat: %v", err)
			}
			if fi.Mode().Perm() != 0o640 {
				t.Errorf("mode %v, want 0640", fi.Mode().Perm())
			}
			if names := tempFiles(t, dir); len(names) != 0 {
				t.Errorf("temporary files left: %v", names)
			}
		})
	}

	t.Run("CreatesNoDirectoryUnlessAsked", func(t *testing.T) {
		t.Parallel()
		srv := sshxtest.Start(t, sshxtest.Options{})
		c := dial(t, config(t, srv))
		dir := filepath.Join(t.TempDir(), "snippets")
		target := filepath.Join(dir, "x.yaml")

		err := c.Upload(context.Background(), target, strings.NewReader("x"), 0o644)
		if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), target) {
			t.Fatalf("got %v, want fs.ErrNotExist naming %s", err, target)
		}
		if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("directory was created: %v", err)
		}
		if err := c.MkdirAll(context.Background(), dir); err != nil {
			t.Fatalf("mkdir: %v", err)
		}
		if err := c.Upload(context.Background(), target, strings.NewReader("x"), 0o644); err != nil {
			t.Fatalf("upload after mkdir: %v", err)
		}
		if got := readFile(t, target); got != "x" {
			t.Errorf("got %q, want %q", got, "x")
		}
	})

	t.Run("CancelAbortsAndCleansUp", func(t *testing.T) {
		t.Parallel()
		srv := sshxtest.Start(t, sshxtest.Options{})
		c := dial(t, config(t, srv))
		dir := t.TempDir()
		target := filepath.Join(dir, "x.yaml")
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()

		pr, pw := io.Pipe()
		defer pw.Close()
		uploaded := make(chan error, 1)
		go func() { uploaded <- c.Upload(ctx, target, pr, 0o600) }()
		if _, err := pw.Write([]byte("partial")); err != nil {
			t.Fatalf("write: %v", err)
		}
		testkit.Eventually(t, 5*time.Second, "temporary file appears", func() bool { return len(tempFiles(t, dir)) == 1 })
		cancel()
		if err := <-uploaded; !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v, want context.Canceled", err)
		}
		testkit.Eventually(t, 5*time.Second, "temporary file is removed", func() bool { return len(tempFiles(t, dir)) == 0 })
		if _, err := os.Stat(target); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("target exists after a cancelled upload: %v", err)
		}
	})
}

func TestReadFile(t *testing.T) {
	t.Parallel()
	srv := sshxtest.Start(t, sshxtest.Options{})
	c := dial(t, config(t, srv))
	dir := t.TempDir()
	name := filepath.Join(dir, "outputs")
	if err := os.WriteFile(name, []byte("ip=10.0.0.5\n"), 0o600); err != nil {
		t.Fatalf("seed: %v", err)
	}
	ctx := context.Background()

	got, err := c.ReadFile(ctx, name, 0)
	if err != nil || string(got) != "ip=10.0.0.5\n" {
		t.Errorf("got %q, %v; want the file", got, err)
	}
	if got, err := c.ReadFile(ctx, name, 12); err != nil || len(got) != 12 {
		t.Errorf("at exactly the limit: got %q, %v; want the file", got, err)
	}
	if _, err := c.ReadFile(ctx, name, 11); !errors.Is(err, sshx.ErrTooLarge) || !strings.Contains(err.Error(), name) {
		t.Errorf("over the limit: got %v, want ErrTooLarge naming the path", err)
	}
	if _, err := c.ReadFile(ctx, filepath.Join(dir, "missing"), 0); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: got %v, want fs.ErrNotExist", err)
	}
}

func TestCopyFile(t *testing.T) {
	t.Parallel()
	srv := sshxtest.Start(t, sshxtest.Options{})
	c := dial(t, config(t, srv))
	dir := t.TempDir()
	name := filepath.Join(dir, "image.qcow2")
	want := bytes.Repeat([]byte("cloud image "), 200_000) // 2.4 MB, larger than one SFTP packet or ReadFile's limit
	if err := os.WriteFile(name, want, 0o600); err != nil {
		t.Fatalf("seed: %v", err)
	}
	var got bytes.Buffer
	n, err := c.CopyFile(context.Background(), name, &got)
	if err != nil || n != int64(len(want)) || !bytes.Equal(got.Bytes(), want) {
		t.Fatalf("got %d bytes (equal %v), %v; want the whole file", n, bytes.Equal(got.Bytes(), want), err)
	}
	if _, err := c.CopyFile(context.Background(), filepath.Join(dir, "missing"), io.Discard); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: got %v, want fs.ErrNotExist", err)
	}
}
