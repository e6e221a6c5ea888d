package template

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"

	"go.yaml.in/yaml/v3"

	"horizon/shared/horizon"
)

// Resources is what each machine of a job uses, for quotas: vCPUs, memory in MiB and disk in
// GiB, each a constant or one of the job's numeric parameters. A job that declares nothing
// counts one machine (when it is a machine job) and nothing else.
type Resources struct {
	Cores    *Amount `json:"cores,omitempty"`
	MemoryMB *Amount `json:"memory_mb,omitempty"`
	DiskGB   *Amount `json:"disk_gb,omitempty"`
}

// Amount is one resource quantity: a constant (Value) or the answer to a parameter of the
// job (Param, written {param: name}).
type Amount struct {
	Value *float64
	Param string
}

// MarshalJSON writes a constant as a number and a reference as {"param": name}.
func (a Amount) MarshalJSON() ([]byte, error) {
	if a.Param != "" || a.Value == nil {
		return json.Marshal(struct {
			Param string `json:"param"`
		}{a.Param})
	}
	return json.Marshal(*a.Value)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (a *Amount) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '{' {
		var ref struct {
			Param string `json:"param"`
		}
		if err := json.Unmarshal(b, &ref); err != nil {
			return err
		}
		*a = Amount{Param: ref.Param}
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return errors.New("a resource amount is a number or {param: name}")
	}
	*a = Amount{Value: &f}
	return nil
}

// amount decodes an Amount from YAML: a number, or an object {param: name}.
func (d *decoder) amount(n *yaml.Node, path string) Amount {
	if n.Kind == yaml.MappingNode {
		var ref struct {
			Param string `json:"param"`
		}
		d.decode(n, &ref, path)
		if ref.Param == "" {
			d.add(horizon.JoinPath(path, "param"), "required: the name of a numeric parameter of this job")
		}
		return Amount{Param: ref.Param}
	}
	if n.Kind == yaml.ScalarNode && (n.ShortTag() == "!!int" || n.ShortTag() == "!!float") {
		f, ok := d.number(n, path)
		if ok {
			return Amount{Value: &f}
		}
		return Amount{}
	}
	d.add(path, "want a number or {param: <name of a numeric parameter>}, got %s", describe(n))
	return Amount{}
}

// named lists the declared amounts with their keys, in document order.
func (r *Resources) named() []struct {
	key string
	dim horizon.Dimension
	a   *Amount
} {
	return []struct {
		key string
		dim horizon.Dimension
		a   *Amount
	}{{"cores", horizon.DimVCPUs, r.Cores}, {"memory_mb", horizon.DimMemoryMiB, r.MemoryMB}, {"disk_gb", horizon.DimDiskGiB, r.DiskGB}}
}

// checkResources checks a job's resources: only a machine job has them; a constant is a
// non-negative integer; a reference names an integer or number parameter of the job whose
// minimum (or every enum value) is 0 or more, so that no answer can lower what a machine counts.
func checkResources(p *horizon.Problems, at string, j *Job) {
	if j.Resources == nil {
		return
	}
	if !j.Machine {
		p.Add(at, "resources are what each machine of the job uses: only a machine job declares them")
		return
	}
	for _, r := range j.Resources.named() {
		if r.a == nil {
			continue
		}
		field := at + "." + r.key
		if r.a.Param == "" {
			switch v := r.a.Value; {
			case v == nil:
				p.Add(field, "want a number or {param: <name>}")
			case *v < 0:
				p.Add(field, "must not be negative, got %v", *v)
			case *v != math.Trunc(*v) || *v > maxSafeInteger:
				p.Add(field, "must be a whole number, got %v", *v)
			}
			continue
		}
		field += ".param"
		pm := j.Parameters.byName(r.a.Param)
		switch {
		case pm == nil:
			p.Add(field, "no parameter of this job is called %q", r.a.Param)
		case pm.Type != TypeInteger && pm.Type != TypeNumber:
			p.Add(field, "parameter %q is of type %s: a resource reads an integer or number parameter", r.a.Param, pm.Type)
		case !nonNegative(pm):
			p.Add(field, "parameter %q needs a minimum of 0 or more (or an enum of such values): a negative answer would lower what its machines count", r.a.Param)
		}
	}
}

// nonNegative reports whether no valid answer to pm is negative: its minimum is 0 or more, or
// it has an enum of values 0 or more.
func nonNegative(pm *Parameter) bool {
	if pm.Minimum != nil && *pm.Minimum >= 0 {
		return true
	}
	if len(pm.Enum) == 0 {
		return false
	}
	for _, v := range pm.Enum {
		if f, ok := toFloat(v); !ok || f < 0 {
			return false
		}
	}
	return true
}

// Cost is what one execution of the job uses with these answers (parameters left out take
// their defaults): one machine and its declared resources for a machine job, nothing for
// another job. A number parameter counts rounded up; an unanswered parameter without a
// default, or a negative value, counts 0 (the answers check reports it).
func (j *Job) Cost(answers map[string]any) horizon.Resources {
	c, reads := j.CostParts()
	for _, r := range reads {
		f, ok := toFloat(answers[r.Param])
		if !ok {
			f = r.Default
		}
		c = c.Add(r.amount(f))
	}
	return c
}

// ParamAmount is an amount of a job's resources read from a parameter: Dim counts the answer
// to Param (Default when unanswered), rounded up, 0 when negative.
type ParamAmount struct {
	Dim     horizon.Dimension
	Param   string
	Default float64
}

func (r ParamAmount) amount(f float64) horizon.Resources {
	var n int64
	switch {
	case f <= 0 || math.IsNaN(f):
	case f > maxSafeInteger:
		n = maxSafeInteger
	default:
		n = int64(math.Ceil(f))
	}
	var c horizon.Resources
	switch r.Dim {
	case horizon.DimVCPUs:
		c.VCPUs = n
	case horizon.DimMemoryMiB:
		c.MemoryMiB = n
	case horizon.DimDiskGiB:
		c.DiskGiB = n
	}
	return c
}

// CostParts splits what each execution of the job costs into what does not depend on its
// answers (the machine, constants) and the amounts read from parameters: Cost with answers is
// fixed plus each read amount. The database keeps each stored execution's cost by the same
// rule (migration 00027's execution_cost; a test in shared/quota holds the two together).
func (j *Job) CostParts() (fixed horizon.Resources, reads []ParamAmount) {
	if !j.Machine {
		return fixed, nil
	}
	fixed.Machines = 1
	if j.Resources == nil {
		return fixed, nil
	}
	for _, r := range j.Resources.named() {
		switch {
		case r.a == nil:
		case r.a.Param != "":
			pa := ParamAmount{Dim: r.dim, Param: r.a.Param}
			if pm := j.Parameters.byName(r.a.Param); pm != nil {
				pa.Default, _ = toFloat(pm.Default)
			}
			reads = append(reads, pa)
		case r.a.Value != nil:
			fixed = fixed.Add(ParamAmount{Dim: r.dim}.amount(*r.a.Value))
		}
	}
	return fixed, reads
}

// CostParameter returns the parameter a dimension's amount reads, "" for a constant or none:
// the field a quota problem names.
func (j *Job) CostParameter(d horizon.Dimension) string {
	if j.Resources == nil {
		return ""
	}
	for _, r := range j.Resources.named() {
		if r.dim == d && r.a != nil {
			return r.a.Param
		}
	}
	return ""
}
