package pve

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"horizon/shared/testkit"
)

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// uploadForm posts a multipart upload as curl -F does.
func (e *testEnv) upload(t *testing.T, node, storage string, fields map[string]string, name string, data []byte) apiResponse {
	t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for k, v := range fields {
		if err := w.WriteField(k, v); err != nil {
			t.Fatal(err)
		}
	}
	part, err := w.CreateFormFile("filename", name)
	if err != nil {
		t.Fatal(err)
	}
	part.Write(data)
	w.Close()
	req, _ := http.NewRequest("POST", e.c.URL()+"/api2/json/nodes/"+node+"/storage/"+storage+"/upload", &buf)
	req.Header.Set("Content-Type", w.FormDataContentType())
	req.Header.Set("Authorization", "PVEAPIToken="+e.c.TokenID()+"="+e.c.TokenSecret())
	return do(t, httpClient(t, e.c), req)
}

func TestUploadAcceptsISOAndRefusesSnippets(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	iso := []byte("an iso image")
	r := e.upload(t, "pve1", "local", map[string]string{"content": "iso", "checksum-algorithm": "sha256", "checksum": sha256Hex(iso)}, "tiny.iso", iso)
	tk := e.waitTask(t, mustOK(t, r).(string))
	if tk.ExitStatus != "OK" || tk.Type != "imgcopy" {
		t.Fatalf("upload task: %+v", tk)
	}
	content := mustOK(t, e.call(t, "GET", "/nodes/pve1/storage/local/content", url.Values{"content": {"iso"}})).([]any)
	if len(content) != 1 || content[0].(map[string]any)["volid"] != "local:iso/tiny.iso" || content[0].(map[string]any)["size"] != float64(len(iso)) {
		t.Fatalf("iso content: %v", content)
	}

	r = e.upload(t, "pve1", "local", map[string]string{"content": "snippets"}, "user.yaml", []byte("#cloud-config\n"))
	if r.status != 400 || r.errors()["content"] != "value 'snippets' does not have a value in the enumeration 'iso, vztmpl, import'" {
		t.Fatalf("snippet upload: %d %v", r.status, r.body)
	}
	r = e.upload(t, "pve1", "local-lvm", map[string]string{"content": "iso"}, "x.iso", iso)
	if r.status != 500 || !strings.Contains(r.reason, "does not support 'iso' content") {
		t.Fatalf("iso onto local-lvm: %d %q", r.status, r.reason)
	}
	r = e.upload(t, "pve1", "local", map[string]string{"content": "iso", "checksum-algorithm": "sha256", "checksum": strings.Repeat("0", 64)}, "bad.iso", iso)
	if tk := e.waitTask(t, mustOK(t, r).(string)); !strings.HasPrefix(tk.ExitStatus, "checksum mismatch") {
		t.Fatalf("upload with a wrong checksum: %q", tk.ExitStatus)
	}
	if _, err := os.Stat(filepath.Join(e.c.storageDir(e.c.storage("local"), "pve1"), "template/iso/bad.iso")); err == nil {
		t.Fatal("a failed upload left its file")
	}
}

func TestDownloadURL(t *testing.T) {
	t.Parallel()
	image := bytes.Repeat([]byte("cloud image "), 1000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/noble.qcow2" {
			http.NotFound(w, r)
			return
		}
		w.Write(image)
	}))
	defer srv.Close()
	e := newEnv(t, nil)
	download := func(form url.Values) Task {
		t.Helper()
		return e.waitTask(t, mustOK(t, e.call(t, "POST", "/nodes/pve2/storage/local/download-url", form)).(string))
	}
	form := func(name, sum string) url.Values {
		return url.Values{"content": {"import"}, "filename": {name}, "url": {srv.URL + "/noble.qcow2"},
			"checksum": {sum}, "checksum-algorithm": {"sha256"}, "verify-certificates": {"1"}}
	}

	tk := download(form("noble.qcow2", sha256Hex(image)))
	if tk.ExitStatus != "OK" || tk.Type != "download" || tk.ID != "noble.qcow2" {
		t.Fatalf("download: %+v", tk)
	}
	content := mustOK(t, e.call(t, "GET", "/nodes/pve2/storage/local/content", url.Values{"content": {"import"}})).([]any)
	if len(content) != 1 || content[0].(map[string]any)["volid"] != "local:import/noble.qcow2" || content[0].(map[string]any)["format"] != "qcow2" {
		t.Fatalf("import content: %v", content)
	}
	if tk := download(form("noble.qcow2", sha256Hex(image))); !strings.Contains(tk.ExitStatus, "refusing to override existing file") {
		t.Fatalf("second download of the same file: %q", tk.ExitStatus)
	}

	wrong := strings.Repeat("ab", 32)
	tk = download(form("other.qcow2", wrong))
	want := "checksum mismatch: got '" + sha256Hex(image) + "' != expect '" + wrong + "'"
	if tk.ExitStatus != want {
		t.Fatalf("checksum mismatch: got %q, want %q", tk.ExitStatus, want)
	}
	if len(mustOK(t, e.call(t, "GET", "/nodes/pve2/storage/local/content", url.Values{"content": {"import"}})).([]any)) != 1 {
		t.Fatal("a download with a wrong checksum left a volume")
	}

	// Transient failures, to exercise retries: the next one fails, the one after works.
	e.sb.FailDownloads(1)
	if tk := download(form("retry.qcow2", sha256Hex(image))); tk.ExitStatus != "download failed: 503 Service Unavailable" {
		t.Fatalf("injected failure: %q", tk.ExitStatus)
	}
	if tk := download(form("retry.qcow2", sha256Hex(image))); tk.ExitStatus != "OK" {
		t.Fatalf("retry: %q", tk.ExitStatus)
	}

	nf := form("missing.qcow2", "")
	nf.Del("checksum")
	nf.Del("checksum-algorithm")
	nf.Set("url", srv.URL+"/missing.qcow2")
	if tk := download(nf); tk.ExitStatus != "download failed: 404 Not Found" {
		t.Fatalf("404: %q", tk.ExitStatus)
	}

	for _, tc := range []struct {
		name  string
		form  url.Values
		param string
	}{
		{"snippets", url.Values{"content": {"snippets"}, "filename": {"u.yaml"}, "url": {srv.URL}}, "content"},
		{"img as import", url.Values{"content": {"import"}, "filename": {"noble.img"}, "url": {srv.URL}}, "filename"},
		{"not http", url.Values{"content": {"iso"}, "filename": {"a.iso"}, "url": {"ftp://x/a.iso"}}, "url"},
		{"checksum alone", url.Values{"content": {"iso"}, "filename": {"a.iso"}, "url": {srv.URL}, "checksum": {"ab"}}, "checksum"},
	} {
		r := e.call(t, "POST", "/nodes/pve2/storage/local/download-url", tc.form)
		if r.status != 400 || r.errors()[tc.param] == nil {
			t.Errorf("%s: got %d %v, want 400 on %s", tc.name, r.status, r.body, tc.param)
		}
	}
}

func TestDownloadVerifiesCertificates(t *testing.T) {
	t.Parallel()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("iso")) }))
	defer srv.Close()
	e := newEnv(t, nil)
	f := url.Values{"content": {"iso"}, "filename": {"a.iso"}, "url": {srv.URL + "/a.iso"}}
	tk := e.waitTask(t, mustOK(t, e.call(t, "POST", "/nodes/pve1/storage/local/download-url", f)).(string))
	if !strings.Contains(tk.ExitStatus, "certificate") {
		t.Fatalf("self-signed mirror with verification: %q", tk.ExitStatus)
	}
	f.Set("verify-certificates", "0")
	if tk := e.waitTask(t, mustOK(t, e.call(t, "POST", "/nodes/pve1/storage/local/download-url", f)).(string)); tk.ExitStatus != "OK" {
		t.Fatalf("verify-certificates=0: %q", tk.ExitStatus)
	}
}

func TestStorageEndpoints(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	cfg := mustOK(t, e.call(t, "GET", "/storage/local", nil)).(map[string]any)
	if cfg["path"] != "/var/lib/vz" || cfg["type"] != "dir" || !strings.Contains(cfg["content"].(string), "snippets") {
		t.Fatalf("storage config: %v", cfg)
	}
	list := mustOK(t, e.call(t, "GET", "/nodes/pve1/storage", url.Values{"content": {"snippets"}})).([]any)
	if len(list) != 2 {
		t.Fatalf("storages with snippets: %v", list)
	}
	for _, s := range list {
		s := s.(map[string]any)
		if s["active"] != 1.0 || s["enabled"] != 1.0 || s["total"].(float64) <= 0 {
			t.Fatalf("storage status: %v", s)
		}
	}
	res := mustOK(t, e.call(t, "GET", "/cluster/resources", url.Values{"type": {"storage"}})).([]any)
	if len(res) != 9 || res[0].(map[string]any)["id"] != "storage/pve1/local" {
		t.Fatalf("storage resources: %v", res)
	}
	if r := e.call(t, "GET", "/nodes/pve1/storage/nosuch/content", nil); r.status != 500 || r.reason != "storage 'nosuch' does not exist" {
		t.Fatalf("unknown storage: %d %q", r.status, r.reason)
	}
}

func TestDeleteContent(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	if err := writeRemote(e.sftp(t, "pve1"), "/var/lib/vz/template/iso/old.iso", "iso"); err != nil {
		t.Fatal(err)
	}
	e.mustTaskOK(t, "DELETE", "/nodes/pve1/storage/local/content/local:iso/old.iso", nil)
	if got := mustOK(t, e.call(t, "GET", "/nodes/pve1/storage/local/content", nil)).([]any); len(got) != 0 {
		t.Fatalf("content after delete: %v", got)
	}
	if r := e.call(t, "DELETE", "/nodes/pve1/storage/local/content/local:iso/old.iso", nil); r.status != 500 {
		t.Fatalf("delete a missing volume: %d %q", r.status, r.reason)
	}
	e.mustTaskOK(t, "POST", "/nodes/pve1/qemu", url.Values{"vmid": {"100"}, "scsi0": {"local-lvm:1"}})
	r := e.call(t, "DELETE", "/nodes/pve1/storage/local-lvm/content/local-lvm:vm-100-disk-0", nil)
	if r.status != 500 || !strings.Contains(r.reason, "still in use by VM 100") {
		t.Fatalf("delete a disk in use: %d %q", r.status, r.reason)
	}
}

// TestStopDownloadTask: a download stopped through DELETE …/tasks/{upid} ends "interrupted by
// signal" and leaves no file, not even a hidden temporary one.
func TestStopDownloadTask(t *testing.T) {
	t.Parallel()
	image := bytes.Repeat([]byte("cloud image "), 1000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(image) }))
	defer srv.Close()
	e := newEnv(t, nil)
	e.sb.HangTasks("download")
	defer e.sb.ReleaseTasks("download")
	upid := mustOK(t, e.call(t, "POST", "/nodes/pve1/storage/local/download-url", url.Values{"content": {"import"},
		"filename": {"stop.qcow2"}, "url": {srv.URL + "/stop.qcow2"}, "checksum": {sha256Hex(image)}, "checksum-algorithm": {"sha256"}})).(string)
	testkit.Eventually(t, 5*time.Second, "the download fetched its file", func() bool {
		for _, l := range e.c.Tasks()[len(e.c.Tasks())-1].Log {
			if strings.Contains(l, "checksum verified") {
				return true
			}
		}
		return false
	})
	if r := e.call(t, "DELETE", "/nodes/pve1/tasks/"+upid, nil); r.status != 200 {
		t.Fatalf("stop: %d %v", r.status, r.body)
	}
	if tk := e.waitTask(t, upid); tk.ExitStatus != "interrupted by signal" {
		t.Fatalf("stopped download: %+v", tk)
	}
	entries, err := os.ReadDir(filepath.Join(e.c.storageDir(e.c.storage("local"), "pve1"), "import"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Fatalf("a stopped download left %v", entries)
	}
	// Stopping a finished task does nothing; an unknown one is refused.
	if r := e.call(t, "DELETE", "/nodes/pve1/tasks/"+upid, nil); r.status != 200 {
		t.Fatalf("stop a finished task: %d %v", r.status, r.body)
	}
	if r := e.call(t, "DELETE", "/nodes/pve1/tasks/UPID:pve1:00000001:00000001:00000001:download:x:root@pam:", nil); r.status != 400 {
		t.Fatalf("stop an unknown task: %d", r.status)
	}
}
