package api

// SetGiven sets *dst to *v when a PATCH gave the field (v not nil), and reports whether it did.
func SetGiven[T any](dst *T, v *T) bool {
	if v != nil {
		*dst = *v
	}
	return v != nil
}
