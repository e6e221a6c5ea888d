package testkit

import (
	"testing"
	"time"
)

// Eventually polls cond every 20 ms until it returns true or timeout passes, then fails the test
// with msg. It is how tests wait for something observable to happen, instead of sleeping.
func Eventually(t testing.TB, timeout time.Duration, msg string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", timeout, msg)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
