package steps

import (
	"strings"

	"horizon/shared/logstream"
	"horizon/shared/secrets"
)

// lineWriter turns a byte stream (a script's stdout or stderr) into log lines, and remembers
// the last line that was not blank: a script's last word on stderr is usually why it failed.
// A line longer than maxScriptLine is passed on in pieces, each cut where no secret the masker
// knows crosses: the log writer masks each piece apart, and half a secret on either side of a
// cut would match nothing.
type lineWriter struct {
	log    *scriptLog
	masker *secrets.Masker
	fd     logstream.FD
	part   []byte
	last   string
}

// maxScriptLine is how much of a line without a newline is held before a piece is passed on.
const maxScriptLine = 64 << 10

func (lw *lineWriter) Write(p []byte) (int, error) {
	for _, b := range p {
		if b == '\n' {
			lw.line(len(lw.part))
			continue
		}
		lw.part = append(lw.part, b)
		if len(lw.part) >= maxScriptLine {
			lw.cutLong()
		}
	}
	return len(p), nil
}

// cutLong passes on the start of an over-long line once the bytes held reach as far beyond
// the cut as the longest secret: every secret crossing the cut is then whole in the buffer.
func (lw *lineWriter) cutLong() {
	reach := max(lw.masker.MaxLen()-1, 0)
	if len(lw.part) < maxScriptLine+reach {
		return
	}
	cut := lw.masker.SafeCut(string(lw.part), len(lw.part)-reach)
	if cut == 0 {
		cut = len(lw.part) // secrets from end to end: masked whole
	}
	lw.line(cut)
}

// line passes on part[:n] as one line and keeps the rest.
func (lw *lineWriter) line(n int) {
	s := string(lw.part[:n])
	lw.log.line(lw.fd, s)
	if strings.TrimSpace(s) != "" {
		lw.last = s
	}
	lw.part = append(lw.part[:0], lw.part[n:]...)
}

// Flush writes a last line without a newline.
func (lw *lineWriter) Flush() {
	if len(lw.part) > 0 {
		lw.line(len(lw.part))
	}
}
