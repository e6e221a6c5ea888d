package cloudinit

import (
	"fmt"

	"go.yaml.in/yaml/v3"
)

// Vendor is what vendor-data is rendered from. Vendor-data is the cloud-config an image build
// adds underneath the user-data of the VMs (cicustom "vendor=<volume>"); user-data wins where
// both set a key.
type Vendor struct {
	// Packages to install on first boot.
	Packages []string
	// RunCmd are commands run at the end of first boot, each an argv (no shell).
	RunCmd [][]string
	// Extra is a YAML mapping of further cloud-config keys, supplied by the operator, appended
	// in its own order after Packages and RunCmd. It may not repeat their keys.
	Extra string
}

// RenderVendorData returns the #cloud-config vendor-data of v. It returns an error when Extra
// is not a YAML mapping of string keys, uses anchors or aliases, sets a key twice, or sets
// packages, package_update or runcmd while v does too.
func RenderVendorData(v Vendor) ([]byte, error) {
	type base struct {
		PackageUpdate bool       `yaml:"package_update,omitempty"`
		Packages      []string   `yaml:"packages,omitempty"`
		RunCmd        [][]string `yaml:"runcmd,omitempty"`
	}
	var doc yaml.Node
	if err := doc.Encode(base{PackageUpdate: len(v.Packages) > 0, Packages: v.Packages, RunCmd: v.RunCmd}); err != nil {
		return nil, fmt.Errorf("encode vendor-data: %w", err)
	}
	if v.Extra != "" {
		var extra yaml.Node
		if err := yaml.Unmarshal([]byte(v.Extra), &extra); err != nil {
			return nil, fmt.Errorf("vendor-data extra: %w", err)
		}
		if extra.Kind != yaml.DocumentNode || len(extra.Content) != 1 || extra.Content[0].Kind != yaml.MappingNode {
			return nil, fmt.Errorf("vendor-data extra is not a YAML mapping")
		}
		ours := map[string]bool{}
		for i := 0; i < len(doc.Content); i += 2 {
			ours[doc.Content[i].Value] = true
		}
		if anchored(&extra) {
			// An anchor on the mapping itself is lost when its pairs join ours, leaving its
			// aliases dangling; and aliases are how a small document expands into a huge one.
			return nil, fmt.Errorf("vendor-data extra may not use YAML anchors or aliases")
		}
		// A duplicate key anywhere (a mapping inside a list inside a value) would be written
		// back as it is: YAML forbids it, and readers disagree on which value wins. Decoding
		// the document, as a reader does, finds them at every depth (anchors are refused
		// above, so nothing expands).
		var probe any
		if err := yaml.Unmarshal([]byte(v.Extra), &probe); err != nil {
			return nil, fmt.Errorf("vendor-data extra: %w", err)
		}
		m := extra.Content[0]
		for i := 0; i < len(m.Content); i += 2 {
			key := m.Content[i]
			// Cloud-config keys are names: a null, number or boolean key would be written
			// back as another key ("&a :" as "''").
			if key.Kind != yaml.ScalarNode || key.ShortTag() != "!!str" {
				return nil, fmt.Errorf("vendor-data extra has a key that is not a string")
			}
			k := key.Value
			if ours[k] {
				return nil, fmt.Errorf("vendor-data extra sets %q, which the vendor-data already sets", k)
			}
		}
		doc.Content = append(doc.Content, m.Content...)
	}
	return encode(&doc)
}

// anchored reports whether n or a node below it holds an anchor or is an alias.
func anchored(n *yaml.Node) bool {
	if n.Anchor != "" || n.Kind == yaml.AliasNode {
		return true
	}
	for _, c := range n.Content {
		if anchored(c) {
			return true
		}
	}
	return false
}
