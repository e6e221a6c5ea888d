package pve

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// contentTypes are PVE's storage content types.
var contentTypes = []string{"images", "rootdir", "vztmpl", "backup", "iso", "snippets", "import"}

// contentDirs are where a file storage keeps each file content type, as PVE's dir plugin
// lays them out under the storage path.
var contentDirs = map[string]string{
	"iso":      "template/iso",
	"vztmpl":   "template/cache",
	"snippets": "snippets",
	"import":   "import",
	"backup":   "dump",
}

const gib = int64(1) << 30

func (c *Cluster) storage(name string) *StorageConfig {
	for i := range c.cfg.Storages {
		if c.cfg.Storages[i].Name == name {
			return &c.cfg.Storages[i]
		}
	}
	return nil
}

func storageOnNode(s *StorageConfig, node string) bool {
	return len(s.Nodes) == 0 || slices.Contains(s.Nodes, node)
}

func (s *StorageConfig) hasContent(ct string) bool { return slices.Contains(s.Content, ct) }

func (s *StorageConfig) fileBased() bool { return s.Path != "" }

// storageDir is the directory holding a file storage's content on node: one per cluster for
// a shared storage, one per node otherwise.
func (c *Cluster) storageDir(s *StorageConfig, node string) string {
	if s.Shared {
		return filepath.Join(c.dir, "storage", s.Name)
	}
	return filepath.Join(c.dir, "nodes", node, "storage", s.Name)
}

// StorageDir is the directory that holds storage's files as node sees them (one directory for
// a shared storage), "" for an unknown storage; tests use it to tamper with a file.
func (c *Cluster) StorageDir(storage, node string) string {
	for i := range c.cfg.Storages {
		if c.cfg.Storages[i].Name == storage {
			return c.storageDir(&c.cfg.Storages[i], node)
		}
	}
	return ""
}

// nodeStorage resolves the {storage} of a call under /nodes/{node}/.
func (c *Cluster) nodeStorage(k *call) (*StorageConfig, error) {
	s := c.storage(k.vars["storage"])
	if s == nil {
		return nil, failf("storage '%s' does not exist", k.vars["storage"])
	}
	if !storageOnNode(s, k.vars["node"]) {
		return nil, failf("storage '%s' is not available on node '%s'", s.Name, k.vars["node"])
	}
	return s, nil
}

// fileVolume is a file on a file storage, named by volume ID "storage:content/name".
type fileVolume struct {
	storage *StorageConfig
	content string
	name    string
}

func (f fileVolume) volid() string { return f.storage.Name + ":" + f.content + "/" + f.name }

func (c *Cluster) fileVolumePath(f fileVolume, node string) string {
	return filepath.Join(c.storageDir(f.storage, node), contentDirs[f.content], f.name)
}

var (
	fileNameRE   = regexp.MustCompile(`^[^/\x00]+$`)
	backupNameRE = regexp.MustCompile(`^vzdump-(?:qemu|lxc)-(\d+)-`)
)

// parseFileVolume parses "local:iso/x.iso" (or "iso/x.iso" with the storage given).
func (c *Cluster) parseFileVolume(volid, defaultStorage string) (fileVolume, bool) {
	sid, volname, ok := strings.Cut(volid, ":")
	if !ok {
		sid, volname = defaultStorage, volid
	}
	s := c.storage(sid)
	if s == nil || !s.fileBased() {
		return fileVolume{}, false
	}
	ct, name, ok := strings.Cut(volname, "/")
	if _, known := contentDirs[ct]; !ok || !known || !fileNameRE.MatchString(name) || name == "." || name == ".." {
		return fileVolume{}, false
	}
	return fileVolume{storage: s, content: ct, name: name}, true
}

// fileFormat is the format PVE reports for a file volume.
func fileFormat(content, name string) string {
	switch content {
	case "iso":
		return "iso"
	case "snippets":
		return "snippet"
	case "vztmpl":
		if m := regexp.MustCompile(`\.tar\.(gz|xz|zst|bz2)$`).FindStringSubmatch(name); m != nil {
			return "t" + m[1]
		}
		return "tgz"
	}
	ext := filepath.Ext(name)
	return strings.TrimPrefix(ext, ".")
}

// listFiles returns the file volumes of one content type on a storage, as content items.
func (c *Cluster) listFiles(s *StorageConfig, node, content string) []map[string]any {
	dir := filepath.Join(c.storageDir(s, node), contentDirs[content])
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil // nothing stored yet
	}
	var out []map[string]any
	for _, e := range entries {
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") {
			continue // skip directories and in-flight temporary files
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		f := fileVolume{storage: s, content: content, name: e.Name()}
		item := map[string]any{
			"volid":   f.volid(),
			"content": content,
			"format":  fileFormat(content, e.Name()),
			"size":    info.Size(),
			"ctime":   info.ModTime().Unix(),
		}
		if m := backupNameRE.FindStringSubmatch(e.Name()); content == "backup" && m != nil {
			item["vmid"], _ = strconv.Atoi(m[1]) // the pattern guarantees digits
		}
		out = append(out, item)
	}
	return out
}

// storageUsed sums the bytes stored on a storage as node sees it.
func (c *Cluster) storageUsed(s *StorageConfig, node string) int64 {
	var used int64
	if s.fileBased() {
		for ct := range contentDirs {
			for _, item := range c.listFiles(s, node, ct) {
				used += item["size"].(int64)
			}
		}
	}
	for _, v := range c.volumes {
		if v.storage() == s.Name && (s.Shared || v.Node == node) {
			used += v.Size
		}
	}
	return used
}

func contentList(s *StorageConfig) string { return strings.Join(s.Content, ",") }

// storageStatus is one item of GET /nodes/{node}/storage and the answer of …/status.
func (c *Cluster) storageStatus(s *StorageConfig, node string) map[string]any {
	total := int64(s.TotalGiB) * gib
	used := min(c.storageUsed(s, node), total)
	return map[string]any{
		"storage":       s.Name,
		"type":          s.Type,
		"content":       contentList(s),
		"active":        1,
		"enabled":       1,
		"shared":        boolInt(s.Shared),
		"total":         total,
		"used":          used,
		"avail":         total - used,
		"used_fraction": float64(used) / float64(total),
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// storageConfig is one item of GET /storage: the storage.cfg entry.
func (c *Cluster) storageConfig(s *StorageConfig) map[string]any {
	item := map[string]any{
		"storage": s.Name,
		"type":    s.Type,
		"content": contentList(s),
		"digest":  c.storageDigest(),
	}
	if s.Path != "" {
		item["path"] = s.Path
	}
	item["shared"] = boolInt(s.Shared)
	if len(s.Nodes) > 0 {
		item["nodes"] = strings.Join(s.Nodes, ",")
	}
	if s.Type == "lvmthin" {
		item["thinpool"] = "data"
		item["vgname"] = "pve"
	}
	return item
}

// storageDigest stands for the SHA1 of storage.cfg, which never changes in the sandbox.
func (c *Cluster) storageDigest() string {
	var b strings.Builder
	for _, s := range c.cfg.Storages {
		fmt.Fprintf(&b, "%s: %s\n\tpath %s\n\tcontent %s\n", s.Type, s.Name, s.Path, contentList(&s))
	}
	return sha1Hex(b.String())
}

func (c *Cluster) storageRoutes() []route {
	return []route{
		{method: "GET", pattern: "/storage", params: []string{"type"}, handle: c.listStorageConfig},
		{method: "GET", pattern: "/storage/{storage}", handle: c.getStorageConfig},
		{method: "GET", pattern: "/nodes/{node}/storage", params: []string{"content", "enabled", "format", "storage", "target"}, handle: c.listNodeStorage},
		{method: "GET", pattern: "/nodes/{node}/storage/{storage}/status", handle: c.getNodeStorageStatus},
		{method: "GET", pattern: "/nodes/{node}/storage/{storage}/content", params: []string{"content", "vmid"}, handle: c.listContent},
		{method: "GET", pattern: "/nodes/{node}/storage/{storage}/content/{volume...}", handle: c.getVolume},
		{method: "DELETE", pattern: "/nodes/{node}/storage/{storage}/content/{volume...}", params: []string{"delay"}, handle: c.deleteVolume},
		{method: "POST", pattern: "/nodes/{node}/storage/{storage}/upload", raw: true, handle: c.upload,
			params: []string{"checksum", "checksum-algorithm", "content", "filename", "tmpfilename"}},
		{method: "POST", pattern: "/nodes/{node}/storage/{storage}/download-url", handle: c.downloadURL,
			params: []string{"checksum", "checksum-algorithm", "compression", "content", "filename", "url", "verify-certificates"}},
	}
}

func (c *Cluster) listStorageConfig(k *call) (any, error) {
	typ := k.p.str("type")
	out := []map[string]any{}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range c.cfg.Storages {
		if s := &c.cfg.Storages[i]; (typ == "" || s.Type == typ) && k.may("/storage/"+s.Name, "Datastore.Audit", "Datastore.AllocateSpace") {
			out = append(out, c.storageConfig(s))
		}
	}
	return out, nil
}

func (c *Cluster) getStorageConfig(k *call) (any, error) {
	s := c.storage(k.vars["storage"])
	if s == nil {
		return nil, failf("storage '%s' does not exist", k.vars["storage"])
	}
	return c.storageConfig(s), nil
}

func (c *Cluster) listNodeStorage(k *call) (any, error) {
	node := k.vars["node"]
	want := splitList(k.p.str("content"))
	k.p.bool("enabled", false) // every sandbox storage is enabled
	k.p.bool("format", false)
	only := k.p.str("storage")
	if err := k.p.err(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	out := []map[string]any{}
	for i := range c.cfg.Storages {
		s := &c.cfg.Storages[i]
		if !storageOnNode(s, node) || (only != "" && s.Name != only) || !k.may("/storage/"+s.Name, "Datastore.Audit", "Datastore.AllocateSpace") {
			continue
		}
		if len(want) > 0 && !slices.ContainsFunc(want, s.hasContent) {
			continue
		}
		out = append(out, c.storageStatus(s, node))
	}
	return out, nil
}

func (c *Cluster) getNodeStorageStatus(k *call) (any, error) {
	s, err := c.nodeStorage(k)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.storageStatus(s, k.vars["node"])
	delete(st, "used_fraction") // only the list reports it
	return st, nil
}

func (c *Cluster) listContent(k *call) (any, error) {
	s, err := c.nodeStorage(k)
	if err != nil {
		return nil, err
	}
	filter := k.p.str("content")
	if filter != "" && !slices.Contains(contentTypes, filter) {
		k.p.fail("content", "invalid format - invalid content type '%s'", filter)
	}
	vmid := k.p.int("vmid", 0, 100)
	if err := k.p.err(); err != nil {
		return nil, err
	}
	node := k.vars["node"]
	c.mu.Lock()
	defer c.mu.Unlock()
	out := []map[string]any{}
	if s.fileBased() && vmid == 0 {
		for _, ct := range s.Content {
			if _, ok := contentDirs[ct]; ok && (filter == "" || filter == ct) {
				out = append(out, c.listFiles(s, node, ct)...)
			}
		}
	}
	if filter == "" || filter == "images" {
		for _, volid := range sortedKeys(c.volumes) {
			v := c.volumes[volid]
			if v.storage() != s.Name || (!s.Shared && v.Node != node) || (vmid != 0 && v.VMID != vmid) {
				continue
			}
			out = append(out, v.contentItem())
		}
	}
	slices.SortFunc(out, func(a, b map[string]any) int { return strings.Compare(a["volid"].(string), b["volid"].(string)) })
	return out, nil
}

func (c *Cluster) getVolume(k *call) (any, error) {
	s, err := c.nodeStorage(k)
	if err != nil {
		return nil, err
	}
	node, volid := k.vars["node"], k.vars["volume"]
	c.mu.Lock()
	defer c.mu.Unlock()
	if !k.may("/storage/"+s.Name, "Datastore.Audit", "Datastore.AllocateSpace") {
		return nil, permissionDenied("/storage/"+s.Name, "Datastore.Audit", "Datastore.AllocateSpace")
	}
	if f, ok := c.parseFileVolume(volid, s.Name); ok && f.storage == s {
		info, err := os.Stat(c.fileVolumePath(f, node))
		if err != nil {
			return nil, failf("volume '%s' does not exist", f.volid())
		}
		return map[string]any{
			"path":   filepath.Join(s.Path, contentDirs[f.content], f.name),
			"size":   info.Size(),
			"used":   info.Size(),
			"format": fileFormat(f.content, f.name),
			"ctime":  info.ModTime().Unix(),
		}, nil
	}
	if !strings.Contains(volid, ":") {
		volid = s.Name + ":" + volid
	}
	v := c.volumes[volid]
	if v == nil || v.storage() != s.Name {
		return nil, failf("volume '%s' does not exist", volid)
	}
	return map[string]any{"path": v.path(s), "size": v.Size, "used": v.Size, "format": v.Format, "ctime": v.CTime}, nil
}

func (c *Cluster) deleteVolume(k *call) (any, error) {
	s, err := c.nodeStorage(k)
	if err != nil {
		return nil, err
	}
	k.p.int("delay", 0, 1)
	if err := k.p.err(); err != nil {
		return nil, err
	}
	node, volid := k.vars["node"], k.vars["volume"]
	c.mu.Lock()
	defer c.mu.Unlock()
	if !k.may("/storage/"+s.Name, "Datastore.Allocate") {
		return nil, permissionDenied("/storage/"+s.Name, "Datastore.Allocate")
	}
	if f, ok := c.parseFileVolume(volid, s.Name); ok && f.storage == s {
		path := c.fileVolumePath(f, node)
		if _, err := os.Stat(path); err != nil {
			return nil, failf("volume '%s' does not exist", f.volid())
		}
		// PVE forks imgdel without an ID.
		return c.startTask(node, "imgdel", "", k.user, nil, func(t *task) error {
			t.logf("Removed volume '%s'", f.volid())
			return os.Remove(path)
		}), nil
	}
	if !strings.Contains(volid, ":") {
		volid = s.Name + ":" + volid
	}
	v := c.volumes[volid]
	if v == nil || v.storage() != s.Name {
		return nil, failf("volume '%s' does not exist", volid)
	}
	if owner := c.vms[v.VMID]; owner != nil && owner.usesVolume(volid) {
		return nil, failf("unable to delete volume '%s' - volume is still in use by VM %d", volid, v.VMID)
	}
	return c.startTask(node, "imgdel", "", k.user, nil, func(t *task) error {
		delete(c.volumes, volid)
		t.logf("Removed volume '%s'", volid)
		return nil
	}), nil
}

// splitList splits a PVE list parameter at commas, semicolons and whitespace.
func splitList(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool {
		return r == ',' || r == ';' || r == ' ' || r == '\t' || r == '\n' || r == '\x00'
	})
}
