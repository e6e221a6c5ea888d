package template

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"sort"

	"horizon/shared/horizon"
)

// Type is the type of a parameter's value.
type Type string

// The parameter types: JSON Schema's scalar types.
const (
	TypeString  Type = "string"
	TypeInteger Type = "integer"
	TypeNumber  Type = "number"
	TypeBoolean Type = "boolean"
)

// maxSafeInteger is the largest integer a JavaScript frontend (and a float64) holds exactly.
// Integer parameters stay within ±maxSafeInteger so that values survive JSON round trips.
const maxSafeInteger = 1<<53 - 1

// Parameter is a value a user answers for each execution of a job (or each run of an action).
// It becomes a Terraform variable of the same name and an environment variable of the scripts.
//
// Default and Enum members hold a string, a float64 (for numbers, the way encoding/json decodes
// them) or a bool.
type Parameter struct {
	Name        string   `json:"name"`
	Type        Type     `json:"type"`
	Description string   `json:"description,omitempty"`
	Default     any      `json:"default,omitempty"`
	Enum        []any    `json:"enum,omitempty"`
	Pattern     string   `json:"pattern,omitempty"`
	Minimum     *float64 `json:"minimum,omitempty"`
	Maximum     *float64 `json:"maximum,omitempty"`
	// Secret values are masked in logs, stored encrypted and never shown again. Only strings.
	Secret bool `json:"secret,omitempty"`
	// Generate: when the user leaves a secret empty, Horizon generates a random value.
	Generate bool `json:"generate,omitempty"`
}

// Required reports whether a user must answer the parameter: it has no default and is not
// generated.
func (pm *Parameter) Required() bool { return pm.Default == nil && !pm.Generate }

// Parameters is a job's or an action's parameters, in the order they are asked.
type Parameters []Parameter

func (ps Parameters) byName(name string) *Parameter {
	for i := range ps {
		if ps[i].Name == name {
			return &ps[i]
		}
	}
	return nil
}

// Validate reports every problem of the parameter definitions, with paths relative to the list
// ("[2].default").
func (ps Parameters) Validate() error {
	var p horizon.Problems
	seen := map[string]bool{}
	for i := range ps {
		at := fmt.Sprintf("[%d]", i)
		pm := &ps[i]
		checkVariableName(&p, at+".name", pm.Name)
		if seen[pm.Name] && pm.Name != "" {
			p.Add(at+".name", "parameter %q is defined twice", pm.Name)
		}
		seen[pm.Name] = true
		p.Merge(at, pm.validate())
	}
	return p.Err()
}

func (pm *Parameter) validate() error {
	var p horizon.Problems
	checkDescription(&p, "description", pm.Description)
	switch pm.Type {
	case TypeString, TypeInteger, TypeNumber, TypeBoolean:
	case "":
		p.Add("type", "required: string, integer, number or boolean")
		return p.Err() // nothing else can be checked without a type
	default:
		p.Add("type", "want string, integer, number or boolean, got %q", pm.Type)
		return p.Err()
	}
	numeric := pm.Type == TypeInteger || pm.Type == TypeNumber
	if pm.Secret && pm.Type != TypeString {
		// A secret is masked in every log line by its text; masking "true" or "8" would mask
		// half the log.
		p.Add("secret", "only a string parameter can be secret")
	}
	if pm.Generate {
		switch {
		case !pm.Secret || pm.Type != TypeString:
			p.Add("generate", "only a secret string can be generated")
		case len(pm.Enum) > 0 || pm.Pattern != "":
			p.Add("generate", "a generated value cannot promise to match an enum or a pattern")
		}
	}
	if pm.Secret && pm.Default != nil {
		p.Add("default", "a secret cannot have a default: the template is not a secret store (use generate: true)")
	}
	if pm.Pattern != "" {
		if pm.Type != TypeString {
			p.Add("pattern", "only a string parameter can have a pattern")
		} else if _, err := regexp.Compile(pm.Pattern); err != nil {
			p.Add("pattern", "does not compile: %v", err)
		}
	}
	for _, b := range []struct {
		key string
		v   *float64
	}{{"minimum", pm.Minimum}, {"maximum", pm.Maximum}} {
		switch {
		case b.v == nil:
		case !numeric:
			p.Add(b.key, "only a number or an integer parameter has bounds")
		case pm.Type == TypeInteger && (*b.v != math.Trunc(*b.v) || math.Abs(*b.v) > maxSafeInteger):
			p.Add(b.key, "an integer parameter's bound must be an integer between ±%d", int64(maxSafeInteger))
		}
	}
	if pm.Minimum != nil && pm.Maximum != nil && *pm.Minimum > *pm.Maximum {
		p.Add("minimum", "minimum %v is more than maximum %v", *pm.Minimum, *pm.Maximum)
	}
	if pm.Enum != nil {
		switch {
		case pm.Type == TypeBoolean:
			p.Add("enum", "a boolean needs no enum")
		case len(pm.Enum) == 0:
			p.Add("enum", "must list at least one value")
		}
		for i, v := range pm.Enum {
			field := fmt.Sprintf("enum[%d]", i)
			if err := pm.checkOwn(v); err != nil {
				p.Add(field, "%v", err)
			} else if slices.IndexFunc(pm.Enum[:i], func(w any) bool { return equal(v, w) }) >= 0 {
				p.Add(field, "%v is listed twice", v)
			}
		}
	}
	if pm.Default != nil {
		if err := pm.Check(pm.Default); err != nil {
			p.Merge("default", err)
		}
	}
	return p.Err()
}

// Check reports whether value is a valid answer for the parameter: of its type (a string; a
// number for number; an integral number within ±2^53 for integer; a bool for boolean), one of
// its enum values, matching its pattern (unanchored, as in JSON Schema: write ^…$) and within
// its bounds. Numbers may be any Go numeric type or a json.Number. The error is a
// *horizon.ValidationError with an empty field, for the caller to place (Problems.Merge).
func (pm *Parameter) Check(value any) error {
	if err := pm.checkOwn(value); err != nil {
		return horizon.Invalid("", "%v", err)
	}
	if len(pm.Enum) > 0 && !slices.ContainsFunc(pm.Enum, func(w any) bool { return equal(value, w) }) {
		return horizon.Invalid("", "must be one of %s", list(pm.Enum))
	}
	return nil
}

// checkOwn checks type, pattern and bounds: everything but the enum.
func (pm *Parameter) checkOwn(value any) error {
	switch pm.Type {
	case TypeString:
		s, ok := value.(string)
		if !ok {
			return fmt.Errorf("want a string, got %s", kind(value))
		}
		if pm.Pattern != "" {
			re, err := regexp.Compile(pm.Pattern)
			if err != nil {
				return fmt.Errorf("the parameter's pattern does not compile")
			}
			if !re.MatchString(s) {
				return fmt.Errorf("must match %s", pm.Pattern)
			}
		}
	case TypeBoolean:
		if _, ok := value.(bool); !ok {
			return fmt.Errorf("want true or false, got %s", kind(value))
		}
	case TypeInteger, TypeNumber:
		f, ok := toFloat(value)
		if !ok {
			return fmt.Errorf("want a number, got %s", kind(value))
		}
		if pm.Type == TypeInteger && (f != math.Trunc(f) || math.Abs(f) > maxSafeInteger) {
			return fmt.Errorf("want an integer between ±%d, got %v", int64(maxSafeInteger), f)
		}
		if pm.Minimum != nil && f < *pm.Minimum {
			return fmt.Errorf("must be at least %v, got %v", *pm.Minimum, f)
		}
		if pm.Maximum != nil && f > *pm.Maximum {
			return fmt.Errorf("must be at most %v, got %v", *pm.Maximum, f)
		}
	default:
		return fmt.Errorf("the parameter has no valid type")
	}
	return nil
}

// Check validates a user's answers for these parameters: every problem at once, each with the
// parameter's name as its field (the caller prefixes it with where the answers sit). An unknown
// name, a missing answer to a required parameter and an invalid value are problems; a nil
// answer counts as no answer.
func (ps Parameters) Check(answers map[string]any) error {
	var p horizon.Problems
	for _, name := range sortedKeys(answers) {
		if ps.byName(name) == nil {
			p.Add(name, "unknown parameter")
		}
	}
	for i := range ps {
		pm := &ps[i]
		v, ok := answers[pm.Name]
		if !ok || v == nil {
			if pm.Required() {
				p.Add(pm.Name, "required")
			}
			continue
		}
		p.Merge(pm.Name, pm.Check(v))
	}
	return p.SortedErr()
}

// toFloat accepts every Go number (any int, uint or float kind) and json.Number.
func toFloat(v any) (float64, bool) {
	var f float64
	if n, ok := v.(json.Number); ok {
		var err error
		if f, err = n.Float64(); err != nil {
			return 0, false
		}
	} else {
		switch rv := reflect.ValueOf(v); {
		case rv.CanInt():
			f = float64(rv.Int())
		case rv.CanUint():
			f = float64(rv.Uint())
		case rv.CanFloat():
			f = rv.Float()
		default:
			return 0, false
		}
	}
	return f, !math.IsNaN(f) && !math.IsInf(f, 0)
}

// equal compares two parameter values, numbers by value whatever their Go type.
func equal(a, b any) bool {
	fa, aNum := toFloat(a)
	fb, bNum := toFloat(b)
	if aNum || bNum {
		return aNum && bNum && fa == fb
	}
	switch a.(type) {
	case string, bool:
		return a == b
	}
	return false
}

func kind(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	}
	if _, ok := toFloat(v); ok {
		return "a number"
	}
	return fmt.Sprintf("a %T", v)
}

func list(vs []any) string {
	b, _ := json.Marshal(vs) // enum members are strings, numbers and booleans
	return string(b)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
