package template

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"go.yaml.in/yaml/v3"

	"horizon/shared/horizon"
)

// MaxSize is the largest template document Parse accepts, in bytes. A real template is a few
// kilobytes; the limit bounds the memory and time one upload can cost.
const MaxSize = 1 << 20

// ErrTooLarge is returned by Parse for a document larger than MaxSize. It is not a
// *horizon.ValidationError: the API answers it with 413.
var ErrTooLarge = fmt.Errorf("template is larger than %d bytes", MaxSize)

// Parse reads a template document, YAML or JSON, strictly: it reports every unknown key, every
// value of the wrong type, duplicate keys, YAML anchors and aliases (refused, never expanded),
// and, when the document is well formed, every problem Validate finds — all at once, in one
// *horizon.ValidationError whose fields are document paths such as
// "phases[1].jobs[0].inputs.join_command". A document larger than MaxSize is ErrTooLarge.
//
// A problem Validate finds at or below a path that already has a decoding problem is left out:
// a key of the wrong type is not also "required". JSON is read as the YAML it is, so YAML's
// leniencies (a trailing comma in a flow mapping) pass too.
func Parse(data []byte) (*Definition, error) {
	if len(data) > MaxSize {
		return nil, ErrTooLarge
	}
	root, err := parseNode(data)
	if err != nil {
		return nil, err
	}
	var d decoder
	def := &Definition{}
	d.decode(root, def, "")
	decodeErr := d.problems.Err()
	if decodeErr == nil {
		if err := def.Validate(); err != nil {
			return nil, err
		}
		return def, nil
	}
	var p horizon.Problems
	p.Merge("", decodeErr)
	var decoded *horizon.ValidationError
	errors.As(decodeErr, &decoded)
	var ve *horizon.ValidationError
	if errors.As(def.Validate(), &ve) {
		for _, f := range ve.Fields {
			if !under(f.Field, decoded.Fields) {
				p.Add(f.Field, "%s", f.Message)
			}
		}
	}
	return nil, p.Err()
}

// parseNode parses exactly one YAML document into its root node, which must be a mapping.
func parseNode(data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, horizon.Invalid("", "the document is empty; want a template object")
		}
		return nil, horizon.Invalid("", "not valid YAML or JSON: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	for {
		var extra yaml.Node
		err := dec.Decode(&extra)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil || !emptyDocument(&extra) { // a stray "---" at the end is no document
			return nil, horizon.Invalid("", "want a single YAML document, got more than one")
		}
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind != yaml.MappingNode {
		return nil, horizon.Invalid("", "want a template object, got %s", describe(root))
	}
	return root, nil
}

func emptyDocument(n *yaml.Node) bool {
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	return n.Kind == 0 || n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" && n.Value == ""
}

// under reports whether field is one of the fields or below one of them.
func under(field string, fields []horizon.FieldError) bool {
	for _, f := range fields {
		if f.Field == "" {
			continue
		}
		if field == f.Field || strings.HasPrefix(field, f.Field+".") || strings.HasPrefix(field, f.Field+"[") {
			return true
		}
	}
	return false
}
