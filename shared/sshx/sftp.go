package sshx

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"time"

	"github.com/pkg/sftp"
)

// DefaultReadLimit is the largest file ReadFile returns when its limit is zero: 1 MiB.
const DefaultReadLimit = 1 << 20

// ErrTooLarge is wrapped by ReadFile's error when the file exceeds the limit.
var ErrTooLarge = errors.New("file too large")

// cleanupTimeout bounds the removal of a failed upload's temporary file.
const cleanupTimeout = 5 * time.Second

// Upload writes the contents of r to the remote file name with permission bits mode, atomically:
// a reader of name sees the old file (or none) until the complete new one replaces it. The parent
// directory must exist (see MkdirAll); when it does not, the error wraps fs.ErrNotExist. Errors
// name the remote path; on error the temporary file is removed on a best-effort basis. When ctx
// ends, the transfer is aborted and ctx.Err() is returned at once; as with os/exec's Stdin, one
// Read of r may then still be in progress.
func (c *Client) Upload(ctx context.Context, name string, r io.Reader, mode fs.FileMode) error {
	tmp := tempName(name)
	renamed := false
	err := c.withSFTP(ctx, func(sc *sftp.Client) error {
		f, err := sc.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL)
		if err != nil {
			return fmt.Errorf("create temporary file: %w", err)
		}
		// Permissions first: a secret must never sit on the node with the server's default mode.
		if err := f.Chmod(mode.Perm()); err != nil {
			_ = f.Close() // the chmod error is the one worth reporting
			return fmt.Errorf("chmod temporary file: %w", err)
		}
		// Copy in a goroutine so that a Read of r that blocks cannot hold Upload past ctx. On
		// cancellation withSFTP closes the session, which fails the copy's next write.
		copied := make(chan error, 1)
		go func() {
			_, err := f.ReadFrom(stopOnDone(ctx, r))
			copied <- err
		}()
		select {
		case err := <-copied:
			if err != nil {
				_ = f.Close() // the write error is the one worth reporting
				return fmt.Errorf("write: %w", err)
			}
		case <-ctx.Done():
			return ctx.Err() // f is still in use by the copy; closing the session releases it
		}
		if _, ok := sc.HasExtension("fsync@openssh.com"); ok {
			// Without it a crash right after the rename could leave an empty file in place.
			if err := f.Sync(); err != nil {
				_ = f.Close() // the sync error is the one worth reporting
				return fmt.Errorf("fsync: %w", err)
			}
		}
		if err := f.Close(); err != nil {
			return fmt.Errorf("close temporary file: %w", err)
		}
		if _, ok := sc.HasExtension("posix-rename@openssh.com"); ok {
			if err := sc.PosixRename(tmp, name); err != nil {
				return fmt.Errorf("rename into place: %w", err)
			}
			renamed = true
			return nil
		}
		// Plain SFTP rename fails when the target exists.
		if err := sc.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove previous file: %w", err)
		}
		if err := sc.Rename(tmp, name); err != nil {
			return fmt.Errorf("rename into place: %w", err)
		}
		renamed = true
		return nil
	})
	if err != nil {
		if !renamed {
			c.removeQuietly(ctx, tmp)
		}
		return fmt.Errorf("upload %s to %s: %w", name, c.addr, err)
	}
	return nil
}

// removeQuietly removes a temporary file left by a failed upload. It runs even when ctx has
// ended, bounded by cleanupTimeout; failure leaves a ".*.horizon-*" file behind, which is harmless.
func (c *Client) removeQuietly(ctx context.Context, name string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	_ = c.withSFTP(ctx, func(sc *sftp.Client) error { return sc.Remove(name) })
}

// MkdirAll creates the remote directory dir and any missing parents, like os.MkdirAll. Upload
// never creates directories by itself: call this when a missing directory is expected.
func (c *Client) MkdirAll(ctx context.Context, dir string) error {
	err := c.withSFTP(ctx, func(sc *sftp.Client) error { return sc.MkdirAll(dir) })
	if err != nil {
		return fmt.Errorf("mkdir %s on %s: %w", dir, c.addr, err)
	}
	return nil
}

// Remove removes the remote file name; a missing file wraps fs.ErrNotExist. Errors name the path.
func (c *Client) Remove(ctx context.Context, name string) error {
	if err := c.withSFTP(ctx, func(sc *sftp.Client) error { return sc.Remove(name) }); err != nil {
		return fmt.Errorf("remove %s on %s: %w", name, c.addr, err)
	}
	return nil
}

// ReadFile returns the contents of the remote file name, which may be at most limit bytes
// (DefaultReadLimit when limit is zero); a larger file is an error wrapping ErrTooLarge, a missing
// one wraps fs.ErrNotExist. Errors name the path.
func (c *Client) ReadFile(ctx context.Context, name string, limit int64) ([]byte, error) {
	if limit <= 0 {
		limit = DefaultReadLimit
	}
	var data []byte
	err := c.withSFTP(ctx, func(sc *sftp.Client) error {
		f, err := sc.Open(name)
		if err != nil {
			return err
		}
		defer func() { _ = f.Close() }() // read-only: a close error changes nothing we return
		data, err = io.ReadAll(io.LimitReader(stopOnDone(ctx, f), limit+1))
		if err != nil {
			return err
		}
		if int64(len(data)) > limit {
			return fmt.Errorf("%w: more than %d bytes", ErrTooLarge, limit)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read %s on %s: %w", name, c.addr, err)
	}
	return data, nil
}

// CopyFile streams the remote file name into w, however large, and returns how many bytes it
// copied: for hashing an image on a node without holding it in memory. A missing file wraps
// fs.ErrNotExist. Errors name the path.
func (c *Client) CopyFile(ctx context.Context, name string, w io.Writer) (int64, error) {
	var n int64
	err := c.withSFTP(ctx, func(sc *sftp.Client) error {
		f, err := sc.Open(name)
		if err != nil {
			return err
		}
		defer func() { _ = f.Close() }() // read-only: a close error changes nothing we return
		n, err = f.WriteTo(writerFunc(func(p []byte) (int, error) {
			if err := ctx.Err(); err != nil {
				return 0, err
			}
			return w.Write(p)
		}))
		return err
	})
	if err != nil {
		return n, fmt.Errorf("read %s on %s: %w", name, c.addr, err)
	}
	return n, nil
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// withSFTP runs fn with an SFTP session of its own, which is closed when fn returns or ctx ends,
// whichever comes first; closing aborts fn's in-flight requests. When ctx ended, ctx.Err() is
// returned instead of the error the abort caused, and when the connection dropped, its cause.
func (c *Client) withSFTP(ctx context.Context, fn func(*sftp.Client) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	sc, err := sftp.NewClient(c.conn)
	if err != nil {
		if cause := c.broken(0); cause != nil {
			return cause
		}
		return fmt.Errorf("start sftp: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { _ = sc.Close() })
	err = fn(sc)
	stop()
	_ = sc.Close() // the session carries no buffered writes: files were closed by fn
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		if cause := c.broken(0); cause != nil {
			return cause
		}
	}
	return err
}

// tempName returns a hidden, unique name next to name.
func tempName(name string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b) // crypto/rand does not fail on supported platforms
	return path.Join(path.Dir(name), "."+path.Base(name)+".horizon-"+hex.EncodeToString(b))
}

// stopOnDone returns a reader that fails with ctx.Err() at the next Read once ctx has ended.
func stopOnDone(ctx context.Context, r io.Reader) io.Reader {
	return readFunc(func(p []byte) (int, error) {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		return r.Read(p)
	})
}

type readFunc func([]byte) (int, error)

func (f readFunc) Read(p []byte) (int, error) { return f(p) }
