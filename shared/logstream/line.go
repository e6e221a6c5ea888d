package logstream

import (
	"encoding/hex"
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"horizon/shared/rstream"
	"horizon/shared/store"
)

// FD says where a line came from.
type FD string

// The file descriptors a line can come from; Horizon is for lines Horizon itself writes.
const (
	Stdout  FD = "stdout"
	Stderr  FD = "stderr"
	Horizon FD = "horizon"
)

func (fd FD) valid() bool { return fd == Stdout || fd == Stderr || fd == Horizon }

// Line is one log line, masked. Its JSON form is the one SSE events and NDJSON downloads carry:
//
//	{"id":"1700000000000-0","run":"…","step":"…","job":"master","execution":0,"fd":"stdout","at":"…","text":"…"}
//
// where step is omitted for run-level lines, and job and execution for lines of no job.
type Line struct {
	ID        rstream.ID
	Run       uuid.UUID
	Step      uuid.UUID // uuid.Nil for a run-level line
	Job       string    // "" for a line of no job; Execution is then meaningless
	Execution int
	FD        FD
	At        time.Time
	Text      string
}

type lineJSON struct {
	ID        rstream.ID `json:"id"`
	Run       uuid.UUID  `json:"run"`
	Step      *uuid.UUID `json:"step,omitempty"`
	Job       string     `json:"job,omitempty"`
	Execution *int       `json:"execution,omitempty"`
	FD        FD         `json:"fd"`
	At        time.Time  `json:"at"`
	Text      string     `json:"text"`
}

// MarshalJSON encodes the line as documented on Line.
func (l Line) MarshalJSON() ([]byte, error) { return l.AppendJSON(nil), nil }

// AppendJSON appends the line's JSON (as documented on Line, and as encoding/json would write
// it) to b. It is what the SSE stream and NDJSON downloads send for every line, written
// without reflection: encoding/json took most of an SSE stream's CPU.
func (l Line) AppendJSON(b []byte) []byte {
	b = append(b, `{"id":"`...)
	b = strconv.AppendUint(b, l.ID.MS, 10)
	b = append(b, '-')
	b = strconv.AppendUint(b, l.ID.Seq, 10)
	b = append(b, `","run":"`...)
	b = appendUUID(b, l.Run)
	b = append(b, '"')
	if l.Step != uuid.Nil {
		b = append(b, `,"step":"`...)
		b = appendUUID(b, l.Step)
		b = append(b, '"')
	}
	if l.Job != "" {
		b = append(b, `,"job":`...)
		b = appendString(b, l.Job)
		b = append(b, `,"execution":`...)
		b = strconv.AppendInt(b, int64(l.Execution), 10)
	}
	b = append(b, `,"fd":`...)
	b = appendString(b, string(l.FD))
	b = append(b, `,"at":"`...)
	b = l.At.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","text":`...)
	b = appendString(b, l.Text)
	return append(b, '}')
}

func appendUUID(b []byte, id uuid.UUID) []byte {
	var s [36]byte
	hex.Encode(s[0:8], id[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], id[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], id[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], id[8:10])
	s[23] = '-'
	hex.Encode(s[24:], id[10:])
	return append(b, s[:]...)
}

// appendString appends s as a JSON string the way encoding/json does: control characters,
// quotes, backslashes, <, > and & escaped, U+2028 and U+2029 escaped, invalid UTF-8 replaced
// by U+FFFD.
func appendString(b []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// UnmarshalJSON decodes what MarshalJSON produced.
func (l *Line) UnmarshalJSON(b []byte) error {
	var j lineJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*l = Line{ID: j.ID, Run: j.Run, Job: j.Job, FD: j.FD, At: j.At, Text: j.Text}
	if j.Step != nil {
		l.Step = *j.Step
	}
	if j.Execution != nil {
		l.Execution = *j.Execution
	}
	return nil
}

// Filter selects lines; a zero field selects everything. Lines of no job match no Job or
// Execution filter.
type Filter struct {
	Job       string
	Execution *int
	Step      uuid.UUID
}

func (f Filter) match(l *Line) bool {
	return (f.Job == "" || l.Job == f.Job) &&
		(f.Execution == nil || l.Job != "" && l.Execution == *f.Execution) &&
		(f.Step == uuid.Nil || l.Step == f.Step)
}

func (f Filter) store() store.LogFilter {
	return store.LogFilter{Job: f.Job, Execution: f.Execution, Step: f.Step}
}

// Kind says what a Message is; its String is the SSE event name.
type Kind int

// The kinds of Message. End and Lagging are always the last message of a follow.
const (
	// KindLine carries a log line.
	KindLine Kind = iota + 1
	// KindEnd says the run ended; Status is its final state.
	KindEnd
	// KindLagging says the follower fell too far behind and was dropped. It must resume from
	// ID, which is the last entry it was given or that its filter skipped.
	KindLagging
)

func (k Kind) String() string {
	switch k {
	case KindLine:
		return "line"
	case KindEnd:
		return "end"
	case KindLagging:
		return "lagging"
	}
	return "unknown"
}

// Message is what a follower receives: a line, the end of the run, or the lagging signal.
type Message struct {
	Kind Kind
	// ID is the stream id to send as the SSE id: the line's or the end's; for KindLagging the
	// id to resume from.
	ID     rstream.ID
	Line   Line   // KindLine
	Status string // KindEnd
	// Unstreamed (KindEnd, from Hub.Follow) is how many stored lines matching the follower's
	// filter were never in the live stream — given fallback ids while Redis failed — less
	// those this follow passed from Postgres. More than 0: the follower missed up to that many
	// lines (the writer's notice may have said so, or not, when Redis was still down at its
	// Close), and reads the stored log (Download) for the complete one.
	Unstreamed int64
}

// Redis entry fields.
const (
	fStep, fJob, fExecution, fFD, fTS, fText = "step", "job", "execution", "fd", "ts", "text"
	fType, fStatus                           = "type", "status"
	typeEOF                                  = "eof"
)

// lineOverhead approximates what a line costs beyond its text and job, in memory and on the
// wire, for buffer accounting.
const lineOverhead = 160

func lineSize(l *Line) int { return len(l.Text) + len(l.Job) + lineOverhead }

// values returns the fields of l's stream entry. ts is Unix microseconds; step and execution
// are empty for a line of no step or job.
func values(l *Line) []string {
	step, exec := "", ""
	if l.Step != uuid.Nil {
		step = l.Step.String()
	}
	if l.Job != "" {
		exec = strconv.Itoa(l.Execution)
	}
	return []string{fStep, step, fJob, l.Job, fExecution, exec, fFD, string(l.FD),
		fTS, strconv.FormatInt(l.At.UnixMicro(), 10), fText, l.Text}
}

// decode turns a stream entry into a Message (without ID and Run, which the caller knows). A
// malformed field reads as its zero value.
func decode(msg redis.XMessage) (Message, int) {
	get := func(k string) string {
		s, _ := msg.Values[k].(string) // go-redis returns every field as a string
		return s
	}
	if get(fType) == typeEOF {
		return Message{Kind: KindEnd, Status: get(fStatus)}, lineOverhead
	}
	ts, _ := strconv.ParseInt(get(fTS), 10, 64)
	l := Line{Job: get(fJob), FD: FD(get(fFD)), At: time.UnixMicro(ts), Text: get(fText)}
	if s := get(fStep); s != "" {
		l.Step, _ = uuid.Parse(s) // written by values, so well-formed
	}
	l.Execution, _ = strconv.Atoi(get(fExecution))
	return Message{Kind: KindLine, Line: l}, lineSize(&l)
}

func toPos(id rstream.ID) store.LogPos {
	return store.LogPos{MS: int64(id.MS), Seq: int64(id.Seq)}
}

func fromPos(p store.LogPos) rstream.ID {
	return rstream.ID{MS: uint64(p.MS), Seq: uint64(p.Seq)}
}

func fromRow(r *store.LogLine) Line {
	return Line{
		ID: fromPos(store.LogPos{MS: r.StreamMS, Seq: r.StreamSeq}), Run: r.RunID, Step: r.StepID,
		Job: r.Job, Execution: r.Execution, FD: FD(r.FD), At: r.At, Text: r.Text,
	}
}

func toRow(l *Line, stack uuid.UUID) store.LogLine {
	p := toPos(l.ID)
	return store.LogLine{
		RunID: l.Run, StackID: stack, StreamMS: p.MS, StreamSeq: p.Seq, StepID: l.Step,
		Job: l.Job, Execution: l.Execution, At: l.At, FD: string(l.FD), Text: l.Text,
	}
}
