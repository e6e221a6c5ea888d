package rstream_test

import (
	"encoding/json"
	"testing"

	"horizon/shared/rstream"
)

func TestParseID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want rstream.ID
		ok   bool
	}{
		{"", rstream.ID{}, true},
		{"0-0", rstream.ID{}, true},
		{"1700000000123-7", rstream.ID{MS: 1700000000123, Seq: 7}, true},
		{"18446744073709551615-18446744073709551615", rstream.ID{MS: 1<<64 - 1, Seq: 1<<64 - 1}, true},
		{"12", rstream.ID{}, false},
		{"a-1", rstream.ID{}, false},
		{"1-", rstream.ID{}, false},
		{"-1-2", rstream.ID{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := rstream.ParseID(tc.in)
			if (err == nil) != tc.ok || got != tc.want {
				t.Fatalf("ParseID(%q) = %v, %v; want %v, ok=%v", tc.in, got, err, tc.want, tc.ok)
			}
			if tc.ok && tc.in != "" && got.String() != tc.in {
				t.Fatalf("String() = %q, want %q", got.String(), tc.in)
			}
		})
	}
}

func TestIDOrderAndJSON(t *testing.T) {
	t.Parallel()
	ids := []rstream.ID{{}, {MS: 1}, {MS: 1, Seq: 1}, {MS: 1, Seq: 1 << 62}, {MS: 2}}
	for i := range ids {
		for j := range ids {
			if got, want := ids[i].Compare(ids[j]), cmpInt(i, j); got != want {
				t.Fatalf("%v.Compare(%v) = %d, want %d", ids[i], ids[j], got, want)
			}
		}
	}
	b, err := json.Marshal(struct{ ID rstream.ID }{rstream.ID{MS: 5, Seq: 6}})
	if err != nil || string(b) != `{"ID":"5-6"}` {
		t.Fatalf("got %s, %v; want {\"ID\":\"5-6\"}", b, err)
	}
	var back struct{ ID rstream.ID }
	if err := json.Unmarshal(b, &back); err != nil || back.ID != (rstream.ID{MS: 5, Seq: 6}) {
		t.Fatalf("round trip: got %v, %v", back.ID, err)
	}
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
