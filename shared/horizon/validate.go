package horizon

import (
	"net/mail"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxNameLength bounds display names (teams, users, networks, …).
const MaxNameLength = 100

// CheckName records a problem unless s is a display name: 1 to max characters after trimming,
// no control characters.
func CheckName(p *Problems, field, s string, max int) {
	t := strings.TrimSpace(s)
	switch {
	case t == "":
		p.Add(field, "is required")
	case utf8.RuneCountInString(t) > max:
		p.Add(field, "must be at most %d characters", max)
	case t != s:
		p.Add(field, "must not start or end with spaces")
	case strings.IndexFunc(t, unicode.IsControl) >= 0:
		p.Add(field, "must not contain control characters")
	}
}

// CheckText records a problem unless s is free text of at most max characters without control
// characters other than newlines and tabs.
func CheckText(p *Problems, field, s string, max int) {
	if utf8.RuneCountInString(s) > max {
		p.Add(field, "must be at most %d characters", max)
		return
	}
	if strings.IndexFunc(s, func(r rune) bool { return unicode.IsControl(r) && r != '\n' && r != '\t' }) >= 0 {
		p.Add(field, "must not contain control characters")
	}
}

// CheckEmail records a problem unless s is a bare e-mail address.
func CheckEmail(p *Problems, field, s string) {
	a, err := mail.ParseAddress(s)
	if err != nil || a.Address != s || len(s) > 254 {
		p.Add(field, "must be an e-mail address like ana@example.org")
	}
}
