package logstream

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"horizon/shared/rstream"
)

// TestLineAppendJSONIsWhatEncodingJSONWrites compares the hand-written encoder with
// encoding/json on the same lines, byte for byte, texts chosen to hit every escape.
func TestLineAppendJSONIsWhatEncodingJSONWrites(t *testing.T) {
	t.Parallel()
	texts := []string{"", "plain", `quote " and \ backslash`, "tab\tnew\nline\rcr", "\x00\x01\x08\x0b\x0c\x1f\x7f",
		"<html> & stuff", "é, 日本語, emoji 😀", "bad utf-8 \xff\xfe and \xe2\x82", "line sep \u2028 para \u2029",
		strings.Repeat("long ", 1000)}
	at := time.Date(2026, 12, 3, 4, 5, 6, 789000000, time.FixedZone("CET", 3600))
	for i, text := range texts {
		for _, l := range []Line{
			{ID: rstream.ID{MS: 1700000000000, Seq: uint64(i)}, Run: uuid.New(), Step: uuid.New(), Job: "web<1>", Execution: 3, FD: Stdout, At: at, Text: text},
			{ID: rstream.ID{MS: 1, Seq: 1<<62 | 12345}, Run: uuid.New(), FD: Horizon, At: at.Add(time.Duration(i)), Text: text},
		} {
			j := lineJSON{ID: l.ID, Run: l.Run, Job: l.Job, FD: l.FD, At: l.At.UTC(), Text: l.Text}
			if l.Step != uuid.Nil {
				j.Step = &l.Step
			}
			if l.Job != "" {
				j.Execution = &l.Execution
			}
			want, err := json.Marshal(j)
			if err != nil {
				t.Fatal(err)
			}
			if got := l.AppendJSON(nil); string(got) != string(want) {
				t.Errorf("text %d:\n got %s\nwant %s", i, got, want)
			}
			var back Line
			if err := json.Unmarshal(l.AppendJSON(nil), &back); err != nil || back.Run != l.Run || back.ID != l.ID || !back.At.Equal(l.At) {
				t.Errorf("text %d does not decode back: %+v, %v", i, back, err)
			}
		}
	}
}
