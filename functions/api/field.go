package api

import (
	"bytes"
	"encoding/json"
	"reflect"
)

// Field is a field of a request body whose absence means something — every field of a PATCH
// body, and the answers of an execution named by its id: it records whether the field was
// sent, whether it was null, and its value.
//
// Whether null is allowed is part of the type. A Field of a pointer type (Field[*uuid.UUID]) is
// nullable: null decodes to a nil value, which Apply writes, clearing the destination. For any
// other T, null is refused while decoding as a type error naming the field (422, see Decode),
// so that no handler can take a null for "leave as is" by mistake. The OpenAPI document says
// the same with [type, "null"].
//
// A value is decoded as strictly as the body around it: an object with a field T does not
// declare is refused. The zero Field is absent.
type Field[T any] struct {
	value T
	given bool
	null  bool
}

// Given reports whether the body carried the field, null included.
func (f Field[T]) Given() bool { return f.given }

// Null reports whether the body carried the field as null (only ever true for a nullable T).
func (f Field[T]) Null() bool { return f.null }

// Value returns the value sent; the zero T when the field is absent or null.
func (f Field[T]) Value() T { return f.value }

// Apply sets *dst to the value sent (nil, for a null) when the field was given, leaves it alone
// when absent, and reports whether it was given.
func (f Field[T]) Apply(dst *T) bool {
	if f.given {
		*dst = f.value
	}
	return f.given
}

// Ptr returns a pointer to the value sent when the field was given, nil when absent: the shape
// of the store's patch structs.
func (f Field[T]) Ptr() *T {
	if !f.given {
		return nil
	}
	v := f.value
	return &v
}

// UnmarshalJSON records that the field was present, and null or its value. A null for a T that
// is not a pointer is a *json.UnmarshalTypeError whose Value is "null"; encoding/json adds the
// field's name.
func (f *Field[T]) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		t := reflect.TypeFor[T]()
		if t.Kind() != reflect.Pointer {
			return &json.UnmarshalTypeError{Value: "null", Type: t}
		}
		*f = Field[T]{given: true, null: true}
		return nil
	}
	var v T
	if err := UnmarshalStrict(b, &v); err != nil {
		return err
	}
	*f = Field[T]{value: v, given: true}
	return nil
}

// UnmarshalStrict is json.Unmarshal refusing a field v does not declare, for an UnmarshalJSON
// method: the decoder that calls one does not pass its strictness on.
func UnmarshalStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
