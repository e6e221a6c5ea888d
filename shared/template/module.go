package template

import (
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/hashicorp/terraform-config-inspect/tfconfig"
)

// Module is what Horizon knows of a job's (or a terraform action's) Terraform module at a
// commit: its variables and outputs, sorted by name. It is plain data, so the API can store it
// with the template version and draw the form without reading git again.
type Module struct {
	// Commit is the commit the module was read at; Inspect sets it.
	Commit    string     `json:"commit,omitempty"`
	Variables []Variable `json:"variables"`
	Outputs   []Output   `json:"outputs"`
}

// Variable is one variable block of a module.
type Variable struct {
	Name string `json:"name"`
	// Type is the type constraint as written ("number", "list(string)"); empty means any.
	Type        string `json:"type,omitempty"`
	Description string `json:"description,omitempty"`
	// Default is an approximation of the default in Go types (as terraform-config-inspect
	// gives it); Required is true when there is none.
	Default   any  `json:"default,omitempty"`
	Required  bool `json:"required"`
	Sensitive bool `json:"sensitive,omitempty"`
}

// Output is one output block of a module. A sensitive output is a secret of the stack.
type Output struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Sensitive   bool   `json:"sensitive,omitempty"`
}

// Modules holds the inspected module of every job and terraform action, by name.
type Modules struct {
	Jobs    map[string]*Module `json:"jobs"`
	Actions map[string]*Module `json:"actions,omitempty"`
}

// ErrNoModule is returned by LoadModule for a directory with no Terraform files.
var ErrNoModule = errors.New("no Terraform files (*.tf, *.tf.json) in the directory")

// LoadModule reads the Terraform module at the root of fsys (a job's source directory at its
// commit). It returns ErrNoModule when there is none, and an error listing the parse problems
// when the module does not parse.
func LoadModule(fsys fs.FS) (*Module, error) {
	tfs := tfconfig.WrapFS(fsys)
	if !tfconfig.IsModuleDirOnFilesystem(tfs, ".") {
		return nil, ErrNoModule
	}
	tm, diags := tfconfig.LoadModuleFromFilesystem(tfs, ".")
	if diags.HasErrors() {
		var msgs []string
		for _, d := range diags {
			if d.Severity != tfconfig.DiagError {
				continue
			}
			msg := d.Summary
			if d.Detail != "" {
				msg += ": " + d.Detail
			}
			if d.Pos != nil {
				msg = fmt.Sprintf("%s:%d: %s", d.Pos.Filename, d.Pos.Line, msg)
			}
			msgs = append(msgs, msg)
		}
		return nil, fmt.Errorf("the Terraform module does not parse: %s", strings.Join(msgs, "; "))
	}
	m := &Module{Variables: []Variable{}, Outputs: []Output{}}
	for _, v := range tm.Variables {
		m.Variables = append(m.Variables, Variable{
			Name: v.Name, Type: v.Type, Description: v.Description,
			Default: v.Default, Required: v.Required, Sensitive: v.Sensitive,
		})
	}
	for _, o := range tm.Outputs {
		m.Outputs = append(m.Outputs, Output{Name: o.Name, Description: o.Description, Sensitive: o.Sensitive})
	}
	sort.Slice(m.Variables, func(i, j int) bool { return m.Variables[i].Name < m.Variables[j].Name })
	sort.Slice(m.Outputs, func(i, j int) bool { return m.Outputs[i].Name < m.Outputs[j].Name })
	return m, nil
}

// Variable returns the variable called name, or nil.
func (m *Module) Variable(name string) *Variable {
	for i := range m.Variables {
		if m.Variables[i].Name == name {
			return &m.Variables[i]
		}
	}
	return nil
}

// Output returns the output called name, or nil.
func (m *Module) Output(name string) *Output {
	for i := range m.Outputs {
		if m.Outputs[i].Name == name {
			return &m.Outputs[i]
		}
	}
	return nil
}
