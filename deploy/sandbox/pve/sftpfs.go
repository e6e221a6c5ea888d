package pve

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"github.com/pkg/sftp"
)

// sftpFS serves SFTP requests from a directory tree of the sandbox. resolve maps an SFTP
// path (absolute, cleaned) to a path on disk; that is how a node's storages appear at their
// PVE paths and a VM's SFTP is rooted at its directory. Symbolic links are neither created
// nor followed out of the tree.
type sftpFS struct {
	resolve func(p string) string
	// openWrite, when set, is called for every file opened for writing; its error refuses
	// the open, and done is called when the file is closed (the node's upload gate).
	openWrite func(p string) (done func(), err error)
}

func (f *sftpFS) handlers() sftp.Handlers {
	return sftp.Handlers{FileGet: f, FilePut: f, FileCmd: f, FileList: f}
}

func (f *sftpFS) osPath(r *sftp.Request) string { return f.resolve(path.Clean("/" + r.Filepath)) }

// Fileread opens a file for reading.
func (f *sftpFS) Fileread(r *sftp.Request) (io.ReaderAt, error) {
	return os.Open(f.osPath(r))
}

// Filewrite opens a file for writing (the client asked for write access only).
func (f *sftpFS) Filewrite(r *sftp.Request) (io.WriterAt, error) {
	w, err := f.open(r)
	if err != nil {
		return nil, err // not a typed nil inside the interface
	}
	return w, nil
}

// OpenFile opens a file for reading and writing (sftp clients' Create does this).
func (f *sftpFS) OpenFile(r *sftp.Request) (sftp.WriterAtReaderAt, error) {
	w, err := f.open(r)
	if err != nil {
		return nil, err
	}
	return w, nil
}

func (f *sftpFS) open(r *sftp.Request) (*writeFile, error) {
	flags := r.Pflags()
	mode := os.O_WRONLY
	if flags.Read {
		mode = os.O_RDWR
	}
	if flags.Creat {
		mode |= os.O_CREATE
	}
	if flags.Trunc {
		mode |= os.O_TRUNC
	}
	if flags.Excl {
		mode |= os.O_EXCL
	}
	done := func() {}
	if f.openWrite != nil {
		d, err := f.openWrite(path.Clean("/" + r.Filepath))
		if err != nil {
			return nil, err
		}
		done = d
	}
	file, err := os.OpenFile(f.osPath(r), mode, 0o644)
	if err != nil {
		done()
		return nil, err
	}
	return &writeFile{File: file, done: done}, nil
}

// writeFile reports its close to the upload gate.
type writeFile struct {
	*os.File
	done func()
}

func (w *writeFile) Close() error {
	err := w.File.Close()
	w.done()
	return err
}

// Filecmd runs the path commands: setstat, rename, mkdir, remove, rmdir.
func (f *sftpFS) Filecmd(r *sftp.Request) error {
	p := f.osPath(r)
	switch r.Method {
	case "Setstat":
		return f.setstat(r, p)
	case "Rename":
		return os.Rename(p, f.resolve(path.Clean("/"+r.Target)))
	case "PosixRename":
		return os.Rename(p, f.resolve(path.Clean("/"+r.Target)))
	case "Rmdir":
		return os.Remove(p)
	case "Remove":
		return os.Remove(p)
	case "Mkdir":
		return os.Mkdir(p, 0o755)
	case "Symlink", "Link":
		return errors.New("sandbox: links are not supported")
	}
	return sftp.ErrSSHFxOpUnsupported
}

// PosixRename is rename that replaces an existing target, as os.Rename does.
func (f *sftpFS) PosixRename(r *sftp.Request) error { return f.Filecmd(r) }

func (f *sftpFS) setstat(r *sftp.Request, p string) error {
	attrs := r.Attributes()
	flags := r.AttrFlags()
	if flags.Size {
		if err := os.Truncate(p, int64(attrs.Size)); err != nil {
			return err
		}
	}
	if flags.Permissions {
		if err := os.Chmod(p, attrs.FileMode().Perm()); err != nil {
			return err
		}
	}
	if flags.Acmodtime {
		return os.Chtimes(p, attrs.AccessTime(), attrs.ModTime())
	}
	return nil
}

// Filelist lists a directory or stats a path.
func (f *sftpFS) Filelist(r *sftp.Request) (sftp.ListerAt, error) {
	p := f.osPath(r)
	switch r.Method {
	case "List":
		entries, err := os.ReadDir(p)
		if err != nil {
			return nil, err
		}
		infos := make([]fs.FileInfo, 0, len(entries))
		for _, e := range entries {
			info, err := e.Info()
			if err != nil {
				continue // removed while listing
			}
			infos = append(infos, info)
		}
		return listerAt(infos), nil
	case "Stat", "Lstat":
		info, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		return listerAt{renamed{info, path.Base(r.Filepath)}}, nil
	}
	return nil, sftp.ErrSSHFxOpUnsupported
}

// renamed reports a FileInfo under the name the client asked for (the storage directory's
// own name differs from the PVE path's last element).
type renamed struct {
	fs.FileInfo
	name string
}

func (r renamed) Name() string { return r.name }

type listerAt []fs.FileInfo

func (l listerAt) ListAt(buf []fs.FileInfo, offset int64) (int, error) {
	if offset >= int64(len(l)) {
		return 0, io.EOF
	}
	n := copy(buf, l[offset:])
	if n < len(buf) {
		return n, io.EOF
	}
	return n, nil
}

// rootedAt returns a resolve function that maps every SFTP path into dir.
func rootedAt(dir string) func(string) string {
	return func(p string) string { return filepath.Join(dir, filepath.FromSlash(p)) }
}
