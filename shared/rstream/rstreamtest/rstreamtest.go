// Package rstreamtest holds what tests of rstream's users share.
package rstreamtest

import (
	"testing"
	"time"

	"horizon/shared/rstream"
)

// Take receives the next n messages of s, failing the test if s closes first or after 30 s.
func Take[M any](t testing.TB, s *rstream.Subscription[M], n int) []M {
	t.Helper()
	deadline := time.After(30 * time.Second)
	var out []M
	for len(out) < n {
		select {
		case m, ok := <-s.C:
			if !ok {
				t.Fatalf("subscription closed after %d of %d messages: %v", len(out), n, s.Err())
			}
			out = append(out, m)
		case <-deadline:
			t.Fatalf("%d of %d messages after 30 s", len(out), n)
		}
	}
	return out
}
