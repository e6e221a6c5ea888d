package drift

import (
	"encoding/json"
	"slices"
	"strings"
)

// Unfixed works out, after an apply, which of a machine's open findings the apply did not fix:
// those whose property still shows the drifted value (a module that does not converge, a disk
// PVE cannot shrink, a VM recreated behind Horizon's back). It returns the record just
// captured with those properties set back to what Horizon set before, and the indexes of the
// findings that stand — so a re-apply clears what it fixed and only that, instead of
// silently adopting what it did not.
func Unfixed(captured Record, open []Finding) (Record, []int) {
	rec := captured
	rec.Config = map[string]string{}
	for k, v := range captured.Config {
		rec.Config[k] = v
	}
	rec.Tags = slices.Clone(captured.Tags)
	var keep []int
	for i, f := range open {
		if !still(captured, f) {
			continue
		}
		keep = append(keep, i)
		restore(&rec, f)
	}
	return rec, keep
}

// still reports whether the captured machine still shows the finding's actual value.
func still(c Record, f Finding) bool {
	switch {
	case f.Kind == Missing:
		return false // the apply found or rebuilt it
	case f.Kind == Replaced:
		return sameJSON(identityValue(c.UUID, c.CTime), f.Actual)
	case f.Path == "node":
		return sameJSON(c.Node, f.Actual)
	case f.Path == "status":
		return sameJSON(c.Status, f.Actual)
	case f.Path == "name":
		return sameJSON(c.Name, f.Actual)
	case f.Path == "tags":
		return sameJSON(nonNil(NormalizeTags(strings.Join(c.Tags, ";"))), f.Actual)
	case f.Path == "pool":
		return sameJSON(absentIfEmpty(c.Pool), f.Actual)
	case f.Path == "lock":
		return false // an apply does not run on a locked VM; the next check sees
	}
	return sameJSON(configValue(c.Config, f.Path), f.Actual)
}

// restore sets the finding's property of rec back to its expected value.
func restore(rec *Record, f Finding) {
	s, _ := f.Expected.(string)
	switch {
	case f.Kind == Replaced:
		if m, ok := f.Expected.(map[string]any); ok {
			rec.UUID, _ = m["uuid"].(string)
			rec.CTime = nil
			if n, ok := m["ctime"].(float64); ok {
				v := int64(n)
				rec.CTime = &v
			} else if n, ok := m["ctime"].(int64); ok {
				rec.CTime = &n
			}
		}
	case f.Path == "node":
		rec.Node = s
	case f.Path == "status":
		rec.Status = s
	case f.Path == "name":
		rec.Name = s
	case f.Path == "pool":
		rec.Pool = s
	case f.Path == "tags":
		rec.Tags = nil
		if l, ok := f.Expected.([]any); ok {
			for _, t := range l {
				if ts, ok := t.(string); ok {
					rec.Tags = append(rec.Tags, ts)
				}
			}
		} else if l, ok := f.Expected.([]string); ok {
			rec.Tags = l
		}
	default:
		setConfigValue(rec.Config, f.Path, f.Expected)
	}
}

// configValue is the value at a config path ("memory", "scsi0.size"), nil when absent.
func configValue(config map[string]string, path string) any {
	if v, ok := config[path]; ok {
		return v
	}
	key, sub, ok := strings.Cut(path, ".")
	if !ok {
		return nil
	}
	props, ok := parseProps(config[key])
	if !ok {
		return nil
	}
	if v, ok := props[sub]; ok {
		return v
	}
	return nil
}

func setConfigValue(config map[string]string, path string, v any) {
	s, isString := v.(string)
	if _, whole := config[path]; whole || !strings.Contains(path, ".") {
		if isString {
			config[path] = s
		} else {
			delete(config, path)
		}
		return
	}
	key, sub, _ := strings.Cut(path, ".")
	props, ok := parseProps(config[key])
	if !ok {
		props = map[string]string{}
	}
	if isString {
		props[sub] = s
	} else {
		delete(props, sub)
	}
	config[key] = joinProps(props)
}

// joinProps writes a property string back ("file" first, bare, as PVE writes a drive).
func joinProps(props map[string]string) string {
	var parts []string
	if f, ok := props["file"]; ok {
		parts = append(parts, f)
	}
	for _, k := range sortedKeys(props) {
		if k != "file" {
			parts = append(parts, k+"="+props[k])
		}
	}
	return strings.Join(parts, ",")
}

func sameJSON(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(ja) == string(jb)
}
