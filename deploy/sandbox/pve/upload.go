package pve

import (
	"context"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

var (
	uploadContents = []string{"iso", "vztmpl", "import"}
	checksumAlgos  = []string{"md5", "sha1", "sha224", "sha256", "sha384", "sha512"}
	// The file name rules of PVE's upload and download-url per content type.
	isoNameRE    = regexp.MustCompile(`(?i)^[^/]+\.(iso|img)$`)
	vztmplNameRE = regexp.MustCompile(`(?i)^[^/]+\.tar\.(gz|xz|zst|bz2)$`)
	importNameRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.\-+]*\.(ova|ovf|qcow2|raw|vmdk)$`)
)

// maxUploadBytes bounds an upload held by the sandbox.
const maxUploadBytes = 16 << 30

func newHash(algo string) hash.Hash {
	switch algo {
	case "md5":
		return md5.New()
	case "sha1":
		return sha1.New()
	case "sha224":
		return sha256.New224()
	case "sha256":
		return sha256.New()
	case "sha384":
		return sha512.New384()
	}
	return sha512.New()
}

// checkTarget validates content and file name for upload and download-url, and returns
// the file volume to create.
func (c *Cluster) checkTarget(p *params, s *StorageConfig) (fileVolume, error) {
	content := p.required("content")
	p.enum("content", uploadContents...)
	name := p.required("filename")
	algo := p.enum("checksum-algorithm", checksumAlgos...)
	if (algo == "") != (p.str("checksum") == "") {
		if algo == "" {
			p.fail("checksum", "parameter 'checksum' requires 'checksum-algorithm'")
		} else {
			p.fail("checksum-algorithm", "parameter 'checksum-algorithm' requires 'checksum'")
		}
	}
	if len(name) > 255 {
		p.fail("filename", "value may only be 255 characters long")
	}
	if err := p.err(); err != nil {
		return fileVolume{}, err
	}
	switch {
	case content == "iso" && !isoNameRE.MatchString(name),
		content == "vztmpl" && !vztmplNameRE.MatchString(name):
		return fileVolume{}, paramErr("filename", "wrong file extension")
	case content == "import" && !importNameRE.MatchString(name):
		return fileVolume{}, paramErr("filename", "invalid filename or wrong extension")
	}
	if !s.hasContent(content) {
		return fileVolume{}, failf("storage '%s' does not support '%s' content", s.Name, content)
	}
	return fileVolume{storage: s, content: content, name: name}, nil
}

// verifyChecksum compares the file's digest with the expected one, with PVE's message.
func verifyChecksum(path, algo, want string, logf func(string, ...any)) error {
	if algo == "" {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close() // read-only
	h := newHash(algo)
	if _, err := io.Copy(h, f); err != nil {
		return err
	}
	got := hex.EncodeToString(h.Sum(nil))
	if !strings.EqualFold(got, want) {
		return fmt.Errorf("checksum mismatch: got '%s' != expect '%s'", got, strings.ToLower(want))
	}
	logf("calculating checksum...OK, checksum verified")
	return nil
}

// upload is POST …/upload: a multipart form with content, optional checksum fields and the
// file in part "filename". The file is received into the storage, then an imgcopy task
// moves it into place (and checks the checksum), as PVE does.
func (c *Cluster) upload(k *call) (any, error) {
	s, err := c.nodeStorage(k)
	if err != nil {
		return nil, err
	}
	ct, ps, _ := mime.ParseMediaType(k.r.Header.Get("Content-Type"))
	if ct != "multipart/form-data" || ps["boundary"] == "" {
		return nil, paramErr("filename", msgMissing)
	}
	mr, err := k.r.MultipartReader()
	if err != nil {
		return nil, paramErr("filename", msgMissing)
	}
	p := k.p
	var tmp string
	defer func() {
		if tmp != "" {
			os.Remove(tmp) // only left when the upload failed before its task took it over
		}
	}()
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, &apiError{status: http.StatusBadRequest, message: "multipart parse error: " + err.Error() + "\n"}
		}
		if part.FormName() != "filename" || part.FileName() == "" {
			b, err := io.ReadAll(io.LimitReader(part, 64<<10))
			if err != nil {
				return nil, failf("read form: %s", err.Error())
			}
			p.values[part.FormName()] = string(b)
			continue
		}
		p.values["filename"] = filepath.Base(part.FileName())
		dir := filepath.Join(c.storageDir(s, k.vars["node"]), "upload-tmp")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, failf("%s", err.Error())
		}
		f, err := os.CreateTemp(dir, ".pveupload-")
		if err != nil {
			return nil, failf("%s", err.Error())
		}
		tmp = f.Name()
		n, err := io.Copy(f, io.LimitReader(part, maxUploadBytes+1))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, failf("upload failed: %s", err.Error())
		}
		if n > maxUploadBytes {
			return nil, &apiError{status: http.StatusRequestEntityTooLarge, message: "upload too large\n"}
		}
	}
	p.checkAllowed([]string{"checksum", "checksum-algorithm", "content", "filename", "tmpfilename"}, k.vars)
	target, err := c.checkTarget(p, s)
	if err != nil {
		return nil, err
	}
	if tmp == "" {
		return nil, paramErr("filename", msgMissing)
	}
	algo, want := p.str("checksum-algorithm"), p.str("checksum")
	node := k.vars["node"]
	src := tmp
	tmp = "" // the task owns the file now
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.startTask(node, "imgcopy", "", k.user, nil, func(t *task) error {
		defer os.Remove(src) // gone after the rename; removed here when the task fails
		if err := verifyChecksum(src, algo, want, t.logf); err != nil {
			return err
		}
		dst := c.fileVolumePath(target, node)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		t.logf("starting file import from: %s", src)
		t.logf("target node: %s", node)
		t.logf("target file: %s", filepath.Join(s.Path, contentDirs[target.content], target.name))
		return os.Rename(src, dst)
	}), nil
}

// downloadURL is POST …/download-url: the task fetches url into the storage, verifying the
// checksum when asked. PVE refuses to overwrite an existing file.
func (c *Cluster) downloadURL(k *call) (any, error) {
	s, err := c.nodeStorage(k)
	if err != nil {
		return nil, err
	}
	p := k.p
	url := p.required("url")
	p.pattern("url", regexp.MustCompile(`^https?://.*`))
	verify := p.bool("verify-certificates", true)
	if comp := p.str("compression"); comp != "" {
		p.fail("compression", "sandbox: decompression ('%s') is not supported", comp)
	}
	target, err := c.checkTarget(p, s)
	if err != nil {
		return nil, err
	}
	algo, want := p.str("checksum-algorithm"), p.str("checksum")
	node := k.vars["node"]
	dst := c.fileVolumePath(target, node)
	shown := filepath.Join(s.Path, contentDirs[target.content], target.name)
	var tmp string
	fetch := func(ctx context.Context, logf func(string, ...any)) error {
		logf("downloading %s to %s", url, shown)
		if _, err := os.Stat(dst); err == nil {
			return fmt.Errorf("refusing to override existing file '%s'", shown)
		}
		if c.sb.knobs.takeDownloadFailure() {
			logf("sandbox: injected transient download failure")
			return fmt.Errorf("download failed: 503 Service Unavailable")
		}
		var err error
		tmp, err = fetchURL(ctx, url, verify, filepath.Dir(dst))
		if err != nil {
			return err
		}
		if err := verifyChecksum(tmp, algo, want, logf); err != nil {
			os.Remove(tmp) // a failed download leaves nothing behind
			return err
		}
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	abort := func() {
		if tmp != "" {
			os.Remove(tmp) // a stopped download leaves nothing behind
		}
	}
	return c.startAbortableTask(node, "download", target.name, k.user, fetch, func(t *task) error {
		defer os.Remove(tmp) // gone after the rename
		if _, err := os.Stat(dst); err == nil {
			return fmt.Errorf("refusing to override existing file '%s'", shown)
		}
		if err := os.Rename(tmp, dst); err != nil {
			return err
		}
		t.logf("download of '%s' to '%s' finished", url, shown)
		return nil
	}, abort), nil
}

// fetchURL downloads url into a temporary file in dir and returns its path.
func fetchURL(ctx context.Context, url string, verify bool, dir string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Minute)
	defer cancel()
	client := &http.Client{Transport: &http.Transport{
		Proxy:           http.ProxyFromEnvironment,
		TLSClientConfig: &tls.Config{InsecureSkipVerify: !verify}, //nolint:gosec // verify-certificates=0 asks for exactly this, as in PVE
	}}
	defer client.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", fmt.Errorf("download failed: %w", err)
	}
	res, err := client.Do(req)
	if err != nil {
		return "", fmt.Errorf("download failed: %w", err)
	}
	defer res.Body.Close() // read to the end below; a close error loses nothing
	if res.StatusCode != http.StatusOK {
		return "", fmt.Errorf("download failed: %s", res.Status)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	f, err := os.CreateTemp(dir, ".download-")
	if err != nil {
		return "", err
	}
	_, err = io.Copy(f, res.Body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("download failed: %w", err)
	}
	return f.Name(), nil
}
