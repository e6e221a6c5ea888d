package isotemplate_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"horizon/shared/horizon"
	"horizon/shared/isotemplate"
)

// FuzzParse feeds Parse any spec of either kind. Its properties: a refusal is always a
// *horizon.ValidationError whose fields all lie under the prefix given (what the API answers as
// a 422 naming them); an accepted spec's canonical form parses again to the same canonical form
// and hash (what is stored and what identifies a build), and Decode reads it back unchanged.
func FuzzParse(f *testing.F) {
	f.Add(true, cloudImage(nil))
	f.Add(false, []byte(`{"source":{"url":"https://x/a.iso","checksum":"`+sum+`"}}`))
	f.Add(false, []byte(`{"source":{"url":"https://x/a.iso","checksum":"`+sum+`"},"colour":1}`))
	f.Add(true, cloudImage(func(m map[string]any) { m["vm"].(map[string]any)["cores"] = "two" }))
	f.Add(true, cloudImage(func(m map[string]any) {
		m["clones"] = []any{map[string]any{"name": "a", "vmid": 9000}}
		m["vm"].(map[string]any)["gpu"] = []any{map[string]any{"device": "gpu0"}}
	}))
	f.Add(true, cloudImage(func(m map[string]any) {
		m["cloud_init"].(map[string]any)["network"] = map[string]any{"mode": "dhcp", "search_domain": "example.org"}
		m["vendor"] = map[string]any{"packages": []string{"qemu-guest-agent"}}
	}))
	f.Add(true, []byte(`null`))
	f.Add(true, []byte(`{} {}`))

	f.Fuzz(func(t *testing.T, cloud bool, raw []byte) {
		kind := horizon.ISOKindISO
		if cloud {
			kind = horizon.ISOKindCloudImage
		}
		s, err := isotemplate.Parse(kind, raw, "spec")
		if err != nil {
			var ve *horizon.ValidationError
			if !errors.As(err, &ve) || len(ve.Fields) == 0 {
				t.Fatalf("Parse returned %T %v, want a *horizon.ValidationError naming fields", err, err)
			}
			for _, fe := range ve.Fields {
				if fe.Field != "spec" && !strings.HasPrefix(fe.Field, "spec.") && !strings.HasPrefix(fe.Field, "spec[") {
					t.Fatalf("problem at %q, outside the spec", fe.Field)
				}
			}
			return
		}
		canonical := s.Canonical()
		again, err := isotemplate.Parse(kind, canonical, "spec")
		if err != nil {
			t.Fatalf("the canonical form of an accepted spec does not parse: %v\n%s", err, canonical)
		}
		if string(again.Canonical()) != string(canonical) || again.Hash() != s.Hash() {
			t.Fatalf("canonical form is not stable:\nfirst:  %s\nsecond: %s", canonical, again.Canonical())
		}
		stored, err := isotemplate.Decode(canonical)
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := json.Marshal(stored); string(b) != string(canonical) {
			t.Fatalf("Decode does not read the stored spec back:\nstored: %s\nread:   %s", canonical, b)
		}
	})
}
