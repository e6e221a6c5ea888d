package drift

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Kind is what happened to a machine or one of its properties.
type Kind string

// The kinds of finding.
const (
	// Missing: the VM id is gone from the cluster.
	Missing Kind = "missing"
	// Moved: the VM runs on another node.
	Moved Kind = "moved"
	// Stopped: the VM Horizon left running is stopped.
	Stopped Kind = "stopped"
	// Changed: a property has another value (CloudFormation's NOT_EQUAL).
	Changed Kind = "changed"
	// Added: a property Horizon did not set is there (ADD).
	Added Kind = "added"
	// Removed: a property Horizon set is gone (REMOVE).
	Removed Kind = "removed"
	// Replaced: the VM id holds another VM (deleted and recreated).
	Replaced Kind = "replaced"
)

// Finding is one difference between what Horizon set and what Proxmox shows. Path "" is the
// machine as a whole. Expected and Actual are JSON values; nil is "absent".
type Finding struct {
	ExecutionID uuid.UUID
	Path        string
	Kind        Kind
	Expected    any
	Actual      any
	// ChangedBy and ChangedAt come from the node's task log when it names a task that explains
	// the finding (the user of its UPID); PVE logs no task for a synchronous config edit.
	ChangedBy string
	ChangedAt *time.Time
}

// Record is what Horizon set on a machine, captured after its last successful apply.
type Record struct {
	ExecutionID uuid.UUID
	StackID     uuid.UUID
	ServerID    uuid.UUID
	VMID        int
	Node        string
	Name        string
	Tags        []string
	Pool        string
	Status      string
	// Config holds the keys the module set, as PVE stores them.
	Config  map[string]string
	CTime   *int64
	UUID    string
	Digest  string
	MaxMem  int64
	MaxCPU  int
	MaxDisk int64
	// RecordedAt is when it was captured; SeenDigest the digest of the last config a check read.
	RecordedAt time.Time
	SeenDigest string
}

// Resource is a VM as GET /cluster/resources?type=vm lists it.
type Resource struct {
	VMID    int     `json:"vmid"`
	Node    string  `json:"node"`
	Name    string  `json:"name"`
	Status  string  `json:"status"`
	Tags    string  `json:"tags"`
	Pool    string  `json:"pool"`
	Lock    string  `json:"lock"`
	MaxMem  int64   `json:"maxmem"`
	MaxCPU  float64 `json:"maxcpu"`
	MaxDisk int64   `json:"maxdisk"`
}

// ignoredKeys are config keys PVE owns or that carry no setting of Horizon's: the notes, the
// snapshot tree, locks, creation metadata and generated identities, and what a running VM
// reports about itself. Tags and name are compared from the listing.
var ignoredKeys = map[string]bool{
	"digest": true, "description": true, "parent": true, "lock": true, "meta": true, "vmgenid": true,
	"smbios1": true, "snaptime": true, "vmstate": true, "runningcpu": true, "runningmachine": true,
	"running-nets-host-mtu": true, "tags": true, "name": true,
}

var unusedRE = regexp.MustCompile(`^unused\d+$`)

// managed reports whether a config key is one a module may have set.
func managed(key string) bool { return !ignoredKeys[key] && !unusedRE.MatchString(key) }

// transientLocks are the locks PVE takes for routine operations and releases by itself.
var transientLocks = map[string]bool{"backup": true, "snapshot": true, "snapshot-delete": true, "rollback": true, "migrate": true}

// Capture is what a config answer (GET …/config) says about a machine: the keys a module may
// have set, as strings, the digest, and its identity (smbios1 uuid, meta ctime).
func Capture(raw map[string]any) (config map[string]string, digest, vmUUID string, ctime *int64) {
	config = map[string]string{}
	for k, v := range raw {
		if managed(k) {
			config[k] = valueString(v)
		}
	}
	digest = valueString(raw["digest"])
	vmUUID, ctime = identity(raw)
	return config, digest, vmUUID, ctime
}

func identity(raw map[string]any) (string, *int64) {
	var id string
	if opts, ok := parseProps(valueString(raw["smbios1"])); ok {
		id = strings.ToLower(opts["uuid"])
	}
	var ctime *int64
	if opts, ok := parseProps(valueString(raw["meta"])); ok {
		if n, err := strconv.ParseInt(opts["ctime"], 10, 64); err == nil {
			ctime = &n
		}
	}
	return id, ctime
}

// valueString renders a config value as PVE stores it: numbers without a fraction as integers.
func valueString(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case bool:
		if x {
			return "1"
		}
		return "0"
	}
	return fmt.Sprint(v)
}

// NormalizeTags is PVE's stored form of a tag list: split at ';', ',' and spaces,
// lower-cased, de-duplicated and sorted.
func NormalizeTags(v string) []string {
	tags := strings.FieldsFunc(strings.ToLower(v), func(r rune) bool { return r == ';' || r == ',' || r == ' ' })
	sort.Strings(tags)
	return slices.Compact(tags)
}

// Listing is the outcome of comparing a machine with its /cluster/resources row.
type Listing struct {
	Findings []Finding
	// Unknown: the VM's node does not answer; nothing may be concluded.
	Unknown bool
	// ReadConfig: the listing shows memory, CPUs or the boot disk changed; the config must be
	// read to say which key.
	ReadConfig bool
}

// CompareListing compares a machine with its row of the cluster listing (nil: the VM id is not
// in the cluster).
func CompareListing(rec Record, res *Resource) Listing {
	f := func(path string, kind Kind, expected, actual any) Finding {
		return Finding{ExecutionID: rec.ExecutionID, Path: path, Kind: kind, Expected: expected, Actual: actual}
	}
	if res == nil {
		return Listing{Findings: []Finding{f("", Missing, map[string]any{"vmid": rec.VMID, "node": rec.Node}, nil)}}
	}
	if res.Status == "unknown" {
		return Listing{Unknown: true}
	}
	var out Listing
	if res.Node != rec.Node {
		out.Findings = append(out.Findings, f("node", Moved, rec.Node, res.Node))
	}
	switch {
	case rec.Status == "running" && res.Status == "stopped":
		out.Findings = append(out.Findings, f("status", Stopped, rec.Status, res.Status))
	case res.Status != rec.Status:
		out.Findings = append(out.Findings, f("status", Changed, rec.Status, res.Status))
	}
	if res.Name != rec.Name {
		out.Findings = append(out.Findings, f("name", Changed, rec.Name, res.Name))
	}
	if want, got := NormalizeTags(strings.Join(rec.Tags, ";")), NormalizeTags(res.Tags); !slices.Equal(want, got) {
		out.Findings = append(out.Findings, f("tags", Changed, nonNil(want), nonNil(got)))
	}
	if res.Pool != rec.Pool {
		out.Findings = append(out.Findings, f("pool", Changed, absentIfEmpty(rec.Pool), absentIfEmpty(res.Pool)))
	}
	if res.Lock != "" && !transientLocks[res.Lock] {
		out.Findings = append(out.Findings, f("lock", Added, nil, res.Lock))
	}
	out.ReadConfig = res.MaxMem != rec.MaxMem || int(res.MaxCPU) != rec.MaxCPU || res.MaxDisk != rec.MaxDisk
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func absentIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// CompareConfig compares the keys Horizon set with a config answer. A VM with another
// identity is one finding, "replaced"; otherwise one finding per property that differs.
func CompareConfig(rec Record, raw map[string]any) []Finding {
	config, _, vmUUID, ctime := Capture(raw)
	if (rec.UUID != "" && vmUUID != rec.UUID) || (rec.CTime != nil && (ctime == nil || *ctime != *rec.CTime)) {
		return []Finding{{ExecutionID: rec.ExecutionID, Kind: Replaced,
			Expected: identityValue(rec.UUID, rec.CTime), Actual: identityValue(vmUUID, ctime)}}
	}
	var out []Finding
	add := func(path string, kind Kind, expected, actual any) {
		out = append(out, Finding{ExecutionID: rec.ExecutionID, Path: path, Kind: kind, Expected: expected, Actual: actual})
	}
	for _, key := range sortedKeys(rec.Config, config) {
		want, had := rec.Config[key]
		got, has := config[key]
		switch {
		case had && !has:
			add(key, Removed, want, nil)
		case !had && has:
			add(key, Added, nil, got)
		case want != got:
			wp, ok1 := parseProps(want)
			gp, ok2 := parseProps(got)
			if !ok1 || !ok2 {
				add(key, Changed, want, got)
				continue
			}
			for _, sub := range sortedKeys(wp, gp) {
				w, hw := wp[sub]
				g, hg := gp[sub]
				switch {
				case hw && !hg:
					add(key+"."+sub, Removed, w, nil)
				case !hw && hg:
					add(key+"."+sub, Added, nil, g)
				case w != g:
					add(key+"."+sub, Changed, w, g)
				}
			}
		}
	}
	return out
}

func identityValue(id string, ctime *int64) map[string]any {
	m := map[string]any{"uuid": id, "ctime": nil}
	if ctime != nil {
		m["ctime"] = *ctime
	}
	return m
}

// parseProps parses a PVE property string ("virtio=BC:24:11:…,bridge=vmbr0"). A first part
// without '=' is the default key ("file" for a drive: "local-lvm:vm-100-disk-0,size=4G"). It
// reports false for a value that is not one (a plain number or word).
func parseProps(s string) (map[string]string, bool) {
	if !strings.Contains(s, "=") {
		return nil, false
	}
	out := map[string]string{}
	for i, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(part, "=")
		switch {
		case ok:
			out[k] = v
		case i == 0:
			out["file"] = part
		default:
			return nil, false
		}
	}
	return out, true
}

func sortedKeys(maps ...map[string]string) []string {
	var keys []string
	for _, m := range maps {
		for k := range m {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return slices.Compact(keys)
}

// Task is one entry of a node's task log (GET /nodes/{node}/tasks).
type Task struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	User      string `json:"user"`
	StartTime int64  `json:"starttime"`
	Status    string `json:"status"`
}

// explainedBy are the task types that explain a kind of finding.
var explainedBy = map[Kind][]string{
	Missing:  {"qmdestroy"},
	Moved:    {"qmigrate"},
	Stopped:  {"qmstop", "qmshutdown", "qmrollback"},
	Changed:  {"qmconfig", "resize", "qmstart", "qmreboot", "qmrollback"},
	Added:    {"qmconfig", "qmrollback"},
	Removed:  {"qmconfig", "qmrollback"},
	Replaced: {"qmcreate", "qmclone", "qmrestore", "qmdestroy"},
}

// Attribute fills ChangedBy and ChangedAt of each finding of the machine rec from the newest
// task of its VM id, of a type that explains the finding, started after Horizon recorded it.
func Attribute(rec Record, findings []Finding, tasks []Task) {
	for i := range findings {
		var best *Task
		for j := range tasks {
			t := &tasks[j]
			if t.ID != strconv.Itoa(rec.VMID) || time.Unix(t.StartTime, 0).Before(rec.RecordedAt.Truncate(time.Second)) ||
				!slices.Contains(explainedBy[findings[i].Kind], t.Type) {
				continue
			}
			if best == nil || t.StartTime > best.StartTime {
				best = t
			}
		}
		if best != nil {
			at := time.Unix(best.StartTime, 0).UTC()
			findings[i].ChangedBy, findings[i].ChangedAt = best.User, &at
		}
	}
}

// Mentions reports whether a node's task log names the machine in a task, started after
// Horizon recorded it, that may have changed its config (so its config must be read). Task
// start times have a resolution of one second: a task of the second of the record is taken
// for Horizon's own (the build that was recorded); the rolling sweep covers the rare other.
func Mentions(tasks []Task, rec Record) bool {
	id := strconv.Itoa(rec.VMID)
	for _, t := range tasks {
		if t.ID == id && t.StartTime > rec.RecordedAt.Unix() && slices.Contains([]string{"qmconfig", "resize", "qmrollback", "qmcreate", "qmclone", "qmrestore", "qmdestroy", "qmigrate"}, t.Type) {
			return true
		}
	}
	return false
}
