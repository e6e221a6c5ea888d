package logstream

import (
	"encoding/json"
	"strconv"
	"time"

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
func (l Line) MarshalJSON() ([]byte, error) {
	j := lineJSON{ID: l.ID, Run: l.Run, Job: l.Job, FD: l.FD, At: l.At.UTC(), Text: l.Text}
	if l.Step != uuid.Nil {
		j.Step = &l.Step
	}
	if l.Job != "" {
		j.Execution = &l.Execution
	}
	return json.Marshal(j)
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
