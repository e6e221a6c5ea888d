package terraform

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-config-inspect/tfconfig"

	"horizon/shared/secrets"
)

// VarsFile is the name of the variables file Horizon writes into the module; Terraform loads
// *.auto.tfvars.json files by itself.
const VarsFile = "horizon.auto.tfvars.json"

// BackendFile is the name of the backend configuration Horizon adds to the module.
const BackendFile = "horizon_backend.tf"

// backendConfig leaves every setting to the environment (TF_HTTP_*): values given with
// -backend-config are saved in .terraform/terraform.tfstate, in clear.
const backendConfig = `# Written by Horizon. State is kept sealed by Horizon's workers, which serve it to the
# built-in http backend; the address and credentials come from the environment (TF_HTTP_*).
terraform {
  backend "http" {}
}
`

// renderVars returns the contents of VarsFile: the candidates whose names module declares as
// variables, and nothing else (Terraform warns about, and OpenTofu may reject, values for
// undeclared variables). A secrets.Value given directly or inside map[string]any and []any is
// written in clear — the file is the way secrets reach Terraform; one hidden elsewhere is an
// error. It returns an error naming every declared variable
// that has no default and no candidate.
func renderVars(module *tfconfig.Module, candidates map[string]any) ([]byte, error) {
	values := map[string]any{}
	var missing []string
	for _, name := range slices.Sorted(maps.Keys(module.Variables)) {
		v, ok := candidates[name]
		if !ok {
			if module.Variables[name].Required {
				missing = append(missing, name)
			}
			continue
		}
		values[name] = reveal(v)
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("module variables without a value: %s", strings.Join(missing, ", "))
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(values); err != nil { // map keys are sorted: the file is deterministic
		return nil, fmt.Errorf("encode variables: %w", err)
	}
	// A Value inside a container reveal does not walk ([]secrets.Value, a struct) was encoded
	// as "[redacted]": refuse rather than hand Terraform a wrong password.
	if bytes.Contains(buf.Bytes(), []byte(`"[redacted]"`)) {
		return nil, errors.New("a secrets.Value inside a variable could not be written: pass it directly, or inside map[string]any or []any")
	}
	return buf.Bytes(), nil
}

// reveal replaces every secrets.Value in v by its plaintext, which json.Marshal would otherwise
// write as "[redacted]".
func reveal(v any) any {
	switch x := v.(type) {
	case secrets.Value:
		return x.Reveal()
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = reveal(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = reveal(e)
		}
		return out
	default:
		return v
	}
}

// inspectModule reads the variables a module declares.
func inspectModule(dir string) (*tfconfig.Module, error) {
	module, diags := tfconfig.LoadModule(dir)
	if diags.HasErrors() {
		return nil, fmt.Errorf("inspect module: %w", diags.Err())
	}
	return module, nil
}
