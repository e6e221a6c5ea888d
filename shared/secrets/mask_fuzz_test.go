package secrets_test

import (
	"strings"
	"testing"

	"horizon/shared/secrets"
)

// FuzzMask checks the masker's promise where logs are cut: a secret placed anywhere in a text,
// with a second secret beside it, never survives masking — neither when the whole text is
// masked, nor when the text is passed on in pieces cut where SafeCut allows (as the script
// output of a step is, a long line at a time), nor when it is masked line by line.
//
// A text may hold the placeholder itself, and the placeholder may sit next to bytes that,
// together with it, spell a secret ("d]pw" after "[masked]"); the check reads every placeholder
// the masker wrote as one byte that no secret holds, so only bytes of the input count.
func FuzzMask(f *testing.F) {
	f.Add("s3cr3t-pass", "token", "before ", " after\n", uint16(3), uint8(7))
	f.Add("line one\nline two", "line", "x", "y", uint16(0), uint8(1))
	f.Add("  padded  ", "pa", "Authorization: Basic ", "", uint16(20), uint8(2))
	f.Add("p@ss w/rd&", "abcdabcd", "?password=", "&next=1", uint16(9), uint8(3))
	f.Add("aaaa", "aaab", "aaa", "aaaa", uint16(1), uint8(1))
	f.Add(`quo"te\`, "ünïcödé", `{"v":"`, `"}`, uint16(5), uint8(4))

	f.Fuzz(func(t *testing.T, secret, other, before, after string, at uint16, piece uint8) {
		if strings.Contains(secret, "\x00") || strings.Contains(other, "\x00") {
			return
		}
		var m secrets.Masker
		m.Add(secret, other)
		text := before + secret + after + other + before
		watched := []string{}
		for _, s := range []string{secret, other} {
			if v := strings.TrimSpace(s); len(v) >= secrets.MinSecretLength && !strings.ContainsAny(s, "\r\n") {
				watched = append(watched, v)
			}
		}
		leaks := func(how, out string) {
			t.Helper()
			plain := strings.ReplaceAll(out, secrets.Masked, "\x00")
			for _, s := range watched {
				if strings.Contains(plain, s) {
					t.Fatalf("%s: secret %q survives in %q (text %q)", how, s, out, text)
				}
			}
		}

		leaks("whole", m.Mask(text))

		// Pieces of at most size bytes, each cut where SafeCut allows, given MaxLen()-1 bytes of
		// look-ahead, as workers/steps does with a long line.
		size := int(piece)%64 + 1
		reach := max(m.MaxLen()-1, 0)
		var out strings.Builder
		rest := text
		for len(rest) > size+reach {
			cut := m.SafeCut(rest, size)
			if cut == 0 {
				cut = len(rest) // secrets from the start to past size: masked whole
			}
			out.WriteString(m.Mask(rest[:cut]))
			rest = rest[cut:]
		}
		out.WriteString(m.Mask(rest))
		leaks("in pieces", out.String())

		// Cut at an arbitrary point: a secret that crosses the cut reaches SafeCut's answer.
		if n := int(at) % (len(text) + 1); len(text)-n >= reach {
			cut := m.SafeCut(text, n)
			if cut > n {
				t.Fatalf("SafeCut(%d) = %d, after the asked cut", n, cut)
			}
			leaks("cut at SafeCut", m.Mask(text[:cut])+m.Mask(text[cut:]))
		}

		// Line by line: a single-line secret is masked in every line it sits in.
		var lines strings.Builder
		for line := range strings.Lines(text) {
			lines.WriteString(m.Mask(line))
		}
		leaks("by lines", lines.String())
	})
}
