package template

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"horizon/shared/horizon"
)

// maxProblems bounds the problems one document can report, so that a megabyte of unknown keys
// does not turn into a megabyte-sized error.
const maxProblems = 100

// amountType is decoded as a union (a number or {param: name}), not as a struct.
var amountType = reflect.TypeFor[Amount]()

// decoder turns a yaml.Node tree into Go values strictly: every key must be a field of the
// target (its json tag), every scalar must have the target's type, and anchors and aliases are
// refused without being followed. It records every problem with its document path and keeps
// going, so one pass reports them all.
type decoder struct {
	problems horizon.Problems
	count    int
}

func (d *decoder) add(path, format string, args ...any) {
	d.count++
	switch {
	case d.count < maxProblems:
		d.problems.Add(path, format, args...)
	case d.count == maxProblems:
		d.problems.Add("", "too many problems; only the first %d are listed", maxProblems-1)
	}
}

// decode fills v (a pointer) from n.
func (d *decoder) decode(n *yaml.Node, v any, path string) {
	d.value(n, reflect.ValueOf(v).Elem(), path)
}

func (d *decoder) value(n *yaml.Node, v reflect.Value, path string) {
	// An alias is never followed and an anchored node never decoded: expanding aliases is how a
	// small document becomes a huge one (billion laughs).
	if n.Kind == yaml.AliasNode || n.Anchor != "" {
		d.add(path, "YAML anchors and aliases are not allowed")
		return
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return // null is "not set"
	}
	if v.Type() == amountType {
		v.Set(reflect.ValueOf(d.amount(n, path)))
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		d.value(n, v.Elem(), path)
	case reflect.Struct:
		d.object(n, v, path)
	case reflect.Map:
		d.mapping(n, v, path)
	case reflect.Slice:
		d.sequence(n, v, path)
	case reflect.String:
		if s, ok := d.str(n, path); ok {
			v.SetString(s)
		}
	case reflect.Bool:
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
			d.add(path, "want true or false, got %s", describe(n))
			return
		}
		b, _ := strconv.ParseBool(strings.ToLower(n.Value)) // the YAML resolver accepted it as a bool
		v.SetBool(b)
	case reflect.Int:
		f, ok := d.number(n, path)
		if !ok {
			return
		}
		if f != math.Trunc(f) || math.Abs(f) > maxSafeInteger {
			d.add(path, "want an integer, got %s", describe(n))
			return
		}
		v.SetInt(int64(f))
	case reflect.Float64:
		if f, ok := d.number(n, path); ok {
			v.SetFloat(f)
		}
	case reflect.Interface:
		if x, ok := d.scalar(n, path); ok && x != nil {
			v.Set(reflect.ValueOf(x))
		}
	default:
		panic(fmt.Sprintf("template: no decoding for %s", v.Type())) // a programmer error in a type of this package
	}
}

func (d *decoder) object(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.add(path, "want an object, got %s", describe(n))
		return
	}
	fields := fieldsByKey(v.Type())
	d.pairs(n, path, func(key string, val *yaml.Node, keyPath string) {
		i, ok := fields[key]
		if !ok {
			d.add(keyPath, "unknown key")
			return
		}
		d.value(val, v.Field(i), keyPath)
	})
}

func (d *decoder) mapping(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.add(path, "want an object, got %s", describe(n))
		return
	}
	if v.IsNil() {
		v.Set(reflect.MakeMap(v.Type()))
	}
	d.pairs(n, path, func(key string, val *yaml.Node, keyPath string) {
		elem := reflect.New(v.Type().Elem()).Elem()
		d.value(val, elem, keyPath)
		v.SetMapIndex(reflect.ValueOf(key), elem)
	})
}

// pairs calls fn for each key of a mapping, refusing keys that are not strings and keys given
// twice.
func (d *decoder) pairs(n *yaml.Node, path string, fn func(key string, val *yaml.Node, keyPath string)) {
	seen := make(map[string]bool, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.AliasNode || k.Anchor != "" {
			d.add(path, "YAML anchors and aliases are not allowed")
			continue
		}
		if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
			d.add(path, "keys must be strings, got %s", describe(k))
			continue
		}
		keyPath := horizon.JoinPath(path, k.Value)
		if seen[k.Value] {
			d.add(keyPath, "key given twice")
			continue
		}
		seen[k.Value] = true
		fn(k.Value, val, keyPath)
	}
}

func (d *decoder) sequence(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.SequenceNode {
		d.add(path, "want a list, got %s", describe(n))
		return
	}
	s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	for i, item := range n.Content {
		d.value(item, s.Index(i), fmt.Sprintf("%s[%d]", path, i))
	}
	v.Set(s)
}

func (d *decoder) str(n *yaml.Node, path string) (string, bool) {
	// A plain date such as 2024-01-01 resolves to a timestamp in YAML; JSON has no such type,
	// so it is read as the string it is written as.
	if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!str" && n.ShortTag() != "!!timestamp") {
		hint := ""
		if n.Kind == yaml.ScalarNode {
			hint = " (quote it to make it a string)"
		}
		d.add(path, "want a string, got %s%s", describe(n), hint)
		return "", false
	}
	return n.Value, true
}

func (d *decoder) number(n *yaml.Node, path string) (float64, bool) {
	if n.Kind == yaml.ScalarNode && (n.ShortTag() == "!!int" || n.ShortTag() == "!!float") {
		var f float64
		if err := n.Decode(&f); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
			return f, true
		}
	}
	d.add(path, "want a number, got %s", describe(n))
	return 0, false
}

// scalar decodes a parameter value (a default or an enum member): a string, a number (as
// float64, the way encoding/json decodes one, so a definition survives a JSON round trip
// unchanged) or a boolean.
func (d *decoder) scalar(n *yaml.Node, path string) (any, bool) {
	if n.Kind != yaml.ScalarNode {
		d.add(path, "want a string, a number or a boolean, got %s", describe(n))
		return nil, false
	}
	switch n.ShortTag() {
	case "!!str", "!!timestamp":
		return n.Value, true
	case "!!int", "!!float":
		return d.number(n, path)
	case "!!bool":
		b, _ := strconv.ParseBool(strings.ToLower(n.Value))
		return b, true
	}
	d.add(path, "want a string, a number or a boolean, got %s", describe(n))
	return nil, false
}

// describe names what a node is, for "want X, got Y" messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "an object"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		v := n.Value
		if len(v) > 40 {
			v = v[:40] + "…"
		}
		switch n.ShortTag() {
		case "!!str", "!!timestamp":
			return fmt.Sprintf("the string %q", v)
		case "!!int":
			return "the integer " + v
		case "!!float":
			return "the number " + v
		case "!!bool":
			return "the boolean " + v
		case "!!null":
			return "null"
		}
		return fmt.Sprintf("a value tagged %s", n.ShortTag())
	}
	return "an alias"
}

// fieldsByKey maps each json key of a struct type to its field index.
func fieldsByKey(t reflect.Type) map[string]int {
	m := make(map[string]int, t.NumField())
	for i := range t.NumField() {
		key, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if key != "" && key != "-" {
			m[key] = i
		}
	}
	return m
}
