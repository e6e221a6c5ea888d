package secrets

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Masked replaces every secret a Masker finds.
const Masked = "[masked]"

// MinSecretLength is the shortest value, in bytes, that a Masker masks, not counting
// surrounding white space. Shorter values are ignored by Add: masking "abc" or "1" (or four
// spaces) everywhere would mangle every log line while protecting almost nothing, since a value
// that short is guessable anyway. Each line of a multi-line secret is held to the same limit.
const MinSecretLength = 4

// Masker replaces secret values in text with Masked. It matches each registered value and the
// forms in which programs commonly print it:
//
//   - the value itself, the value trimmed of surrounding white space, and each line of a
//     multi-line value (trimmed too, so an indented copy still matches), as GitHub Actions does;
//   - base64, standard and URL alphabets, padded and unpadded, and the part of its encoding that
//     does not depend on neighbouring bytes when the value sits inside a longer encoded string
//     at any of the three alignments (a password inside "Authorization: Basic base64(user:pw)");
//   - hexadecimal, lower and upper case;
//   - URL query and path escaping, and JSON string escaping (with and without HTML escaping).
//
// Where matches overlap or touch, the union of their spans is replaced by one Masked, so two
// overlapping secrets never leave a piece of either visible; this is what "longest match first"
// must achieve, without its order dependence. A Masker cannot find a secret it was not given,
// nor one transformed in another way (reversed, split across lines, compressed): it is a safety
// net, not a guarantee, so secrets should still not be printed on purpose.
//
// The zero value is ready to use. A Masker is safe for concurrent use: Add may run while other
// goroutines call Mask, which never blocks (it reads an immutable snapshot).
type Masker struct {
	mu  sync.Mutex // serialises Add
	set atomic.Pointer[needleSet]
}

// needleSet is an immutable snapshot of every string to mask, indexed by its first two bytes.
type needleSet struct {
	secrets map[string]struct{} // the values as given, to make Add idempotent
	needles map[string]struct{}
	// byPrefix holds the needles starting with each two-byte prefix, longest first; bits has one
	// bit per prefix so that the scan skips almost every position without a map lookup.
	byPrefix map[uint16][]string
	bits     [1 << 16 / 64]uint64
	minLen   int
	maxLen   int
}

// Add registers secret values. Values shorter than MinSecretLength are ignored (see there), as
// are lines of a multi-line value that are. Adding a value twice has no further effect.
func (m *Masker) Add(values ...string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	old := m.set.Load()
	next := &needleSet{secrets: map[string]struct{}{}, needles: map[string]struct{}{}}
	if old != nil {
		for s := range old.secrets {
			next.secrets[s] = struct{}{}
		}
		for n := range old.needles {
			next.needles[n] = struct{}{}
		}
	}
	added := false
	for _, v := range values {
		if _, ok := next.secrets[v]; ok || len(strings.TrimSpace(v)) < MinSecretLength {
			continue
		}
		next.secrets[v] = struct{}{}
		for _, n := range variants(v) {
			if len(n) >= MinSecretLength {
				next.needles[n] = struct{}{}
			}
		}
		added = true
	}
	if !added {
		return
	}
	next.index()
	m.set.Store(next)
}

// Len reports how many distinct values are registered (not counting their encodings).
func (m *Masker) Len() int {
	set := m.set.Load()
	if set == nil {
		return 0
	}
	return len(set.secrets)
}

func (s *needleSet) index() {
	s.byPrefix = make(map[uint16][]string)
	s.minLen, s.maxLen = 0, 0
	for n := range s.needles {
		s.maxLen = max(s.maxLen, len(n))
		k := prefixKey(n, 0)
		s.byPrefix[k] = append(s.byPrefix[k], n)
		s.bits[k/64] |= 1 << (k % 64)
		if s.minLen == 0 || len(n) < s.minLen {
			s.minLen = len(n)
		}
	}
	for k, ns := range s.byPrefix {
		// Longest first: at one position the longest needle covers every shorter one that
		// matches there, so the scan can stop at the first hit. Ties sort by content so that
		// the order never depends on map iteration.
		slices.SortFunc(ns, func(a, b string) int {
			if len(a) != len(b) {
				return len(b) - len(a)
			}
			return strings.Compare(a, b)
		})
		s.byPrefix[k] = ns
	}
}

func prefixKey(s string, i int) uint16 { return uint16(s[i])<<8 | uint16(s[i+1]) }

// Mask returns s with every registered secret, in every form listed on Masker, replaced by
// Masked. It works on any text, including multi-line text and error strings, and returns s
// itself (no allocation) when nothing matches.
func (m *Masker) Mask(s string) string {
	var b strings.Builder
	emitted := 0 // s[:emitted] is already in b
	m.set.Load().spans(s, func(start, end int) {
		b.Grow(len(s))
		b.WriteString(s[emitted:start])
		b.WriteString(Masked)
		emitted = end
	})
	if emitted == 0 && b.Len() == 0 {
		return s
	}
	b.WriteString(s[emitted:])
	return b.String()
}

// SafeCut returns where a text that goes on beyond s may be cut, at or before at, so that
// masking the two sides apart hides everything masking the whole would: at itself when no
// match of a secret crosses it, else the start of the matches that do. It needs s to hold at
// least MaxLen()-1 bytes beyond at, so that every match crossing at is complete in s; it returns
// 0 when the matches run from the start of s up to at.
func (m *Masker) SafeCut(s string, at int) int {
	cut := at
	m.set.Load().spans(s, func(start, end int) {
		if start < at && at < end {
			cut = start
		}
	})
	return cut
}

// MaxLen is the length of the longest text the masker matches: how far beyond a cut a match
// can reach (0 before any Add).
func (m *Masker) MaxLen() int {
	set := m.set.Load()
	if set == nil {
		return 0
	}
	return set.maxLen
}

// spans calls fn with each span of s to mask, in order: matches that overlap or touch merged.
func (set *needleSet) spans(s string, fn func(start, end int)) {
	if set == nil || len(s) < set.minLen {
		return
	}
	start, end := -1, -1 // the current span of merged matches
	for i := 0; i+1 < len(s); i++ {
		k := prefixKey(s, i)
		if set.bits[k/64]&(1<<(k%64)) == 0 {
			continue
		}
		for _, n := range set.byPrefix[k] {
			if !strings.HasPrefix(s[i:], n) {
				continue
			}
			switch {
			case start < 0:
				start, end = i, i+len(n)
			case i <= end: // overlaps or touches the current span: extend it
				end = max(end, i+len(n))
			default:
				fn(start, end)
				start, end = i, i+len(n)
			}
			break
		}
	}
	if start >= 0 {
		fn(start, end)
	}
}

// variants returns the strings to mask for one secret value.
func variants(v string) []string {
	out := encodings(v)
	if t := strings.TrimSpace(v); t != v && len(t) >= MinSecretLength {
		out = append(out, encodings(t)...)
	}
	if strings.ContainsAny(v, "\r\n") {
		for line := range strings.Lines(v) {
			line = strings.TrimSpace(line)
			if len(line) >= MinSecretLength {
				out = append(out, encodings(line)...)
			}
		}
	}
	return out
}

func encodings(v string) []string {
	b := []byte(v)
	out := []string{
		v,
		base64.StdEncoding.EncodeToString(b),
		base64.RawStdEncoding.EncodeToString(b),
		base64.URLEncoding.EncodeToString(b),
		base64.RawURLEncoding.EncodeToString(b),
		hex.EncodeToString(b),
		strings.ToUpper(hex.EncodeToString(b)),
		url.QueryEscape(v),
		url.PathEscape(v),
		jsonEscape(v, true),
		jsonEscape(v, false),
	}
	for shift := range 3 {
		out = append(out, base64Core(b, shift, base64.RawStdEncoding), base64Core(b, shift, base64.RawURLEncoding))
	}
	return out
}

// base64Core returns the characters of the base64 encoding of b that are the same whatever
// bytes surround b, when b starts shift bytes (0, 1 or 2) after a 3-byte group boundary of a
// longer encoded string. Characters that also depend on a neighbouring byte are dropped: 2 or 3
// at the start for shift 1 or 2, and the last one when b does not end on a group boundary.
func base64Core(b []byte, shift int, enc *base64.Encoding) string {
	padded := make([]byte, shift, shift+len(b))
	padded = append(padded, b...)
	s := enc.EncodeToString(padded)
	drop := [3]int{0, 2, 3}[shift]
	if len(padded)%3 != 0 {
		s = s[:len(s)-1]
	}
	if len(s) <= drop {
		return ""
	}
	return s[drop:]
}

// jsonEscape returns v as it appears inside a JSON string, without the quotes.
func jsonEscape(v string, escapeHTML bool) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(escapeHTML)
	_ = enc.Encode(v) // encoding a string cannot fail; invalid UTF-8 is replaced
	out := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	return string(out[1 : len(out)-1])
}
