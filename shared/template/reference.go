package template

import (
	"errors"
	"regexp"
)

// Reference is a parsed input value, "${jobs.<Job>.outputs.<Output>}": the value of Output of
// Job's execution.
type Reference struct {
	Job    string
	Output string
}

// String returns the reference as it is written in a template.
func (r Reference) String() string { return "${jobs." + r.Job + ".outputs." + r.Output + "}" }

// referenceRE accepts any Terraform identifier as the output name (modules name their outputs
// freely); the job name is checked against the template's jobs afterwards.
var referenceRE = regexp.MustCompile(`^\$\{jobs\.([a-z0-9-]+)\.outputs\.([A-Za-z_][A-Za-z0-9_-]*)\}$`)

// errMalformedReference is the problem of an input that is not exactly one reference.
var errMalformedReference = errors.New("want a reference ${jobs.<job>.outputs.<output>}")

// ParseReference parses an input value. An input is exactly one reference: no literal text
// around it and no second reference, so the value passed on keeps the output's type.
func ParseReference(s string) (Reference, error) {
	m := referenceRE.FindStringSubmatch(s)
	if m == nil {
		return Reference{}, errMalformedReference
	}
	return Reference{Job: m[1], Output: m[2]}, nil
}
