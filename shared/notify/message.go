package notify

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Kind is a subscription's destination kind.
type Kind string

// The destination kinds.
const (
	KindStandard   Kind = "standard"
	KindSlack      Kind = "slack"
	KindMattermost Kind = "mattermost"
)

// Valid reports whether k is a destination kind.
func (k Kind) Valid() bool { return k == KindStandard || k == KindSlack || k == KindMattermost }

// Event is one outbox row: what happened, when, and its thin data (Data's keys are fixed by the
// store's SQL: ids, names, team, states, kind and result, the first error line, who and when).
type Event struct {
	ID   string
	Type EventType
	At   time.Time
	Data map[string]any
}

// Envelope is the body of a standard message: the Standard Webhooks payload structure.
type Envelope struct {
	Type      EventType      `json:"type"`
	Timestamp time.Time      `json:"timestamp"`
	Data      map[string]any `json:"data"`
}

// Body renders the request body for kind, adding the console link (console is the console's
// base URL; empty leaves links out).
func Body(kind Kind, e Event, console string) ([]byte, error) {
	data := make(map[string]any, len(e.Data)+1)
	for k, v := range e.Data {
		data[k] = v
	}
	if link := consoleLink(console, data); link != "" {
		data["console_url"] = link
	}
	switch kind {
	case KindSlack, KindMattermost:
		// Both take {"text": …}; Slack reads <url|label> links, Mattermost Markdown ones.
		return json.Marshal(map[string]string{"text": Text(kind, e.Type, data)})
	default:
		return json.Marshal(Envelope{Type: e.Type, Timestamp: e.At.UTC(), Data: data})
	}
}

// consoleLink is the console's page of the event's object.
func consoleLink(console string, data map[string]any) string {
	if console == "" {
		return ""
	}
	base := strings.TrimRight(console, "/")
	if id, ok := data["stack_id"].(string); ok && id != "" {
		return base + "/#/stacks/" + id
	}
	if id, ok := data["iso_id"].(string); ok && id != "" {
		return base + "/#/isos/" + id
	}
	return base + "/"
}

var slackEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// mattermostEscaper keeps a name or an error line from pinging (@channel, @all, @here, @user: a
// zero-width space after the @ breaks the mention, as chat bots do) and from becoming Markdown
// (a link, an image, emphasis): Markdown's backslash escapes.
var mattermostEscaper = strings.NewReplacer("@", "@\u200b", "\\", "\\\\", "[", "\\[", "]", "\\]", "(", "\\(", ")", "\\)",
	"<", "\\<", ">", "\\>", "!", "\\!", "`", "\\`", "*", "\\*", "_", "\\_", "~", "\\~", "#", "\\#", "|", "\\|")

// Text is the one-line chat message of an event.
func Text(kind Kind, t EventType, data map[string]any) string {
	s := func(k string) string {
		v, _ := data[k].(string)
		return v
	}
	var msg string
	switch t {
	case RunFinished, ActionFinished:
		msg = fmt.Sprintf("%s of stack %s (team %s): %s", s("run_kind"), s("stack_name"), s("team_name"), s("result"))
	case StackStateChanged:
		msg = fmt.Sprintf("Stack %s (team %s) is now %s (was %s)", s("stack_name"), s("team_name"), s("to_state"), s("from_state"))
	case ISOBuilt, ISOFailed:
		msg = fmt.Sprintf("ISO %s: %s", s("iso_name"), s("state"))
	case DriftFound:
		msg = fmt.Sprintf("Stack %s (team %s) changed on Proxmox outside Horizon: %v finding(s)", s("stack_name"), s("team_name"), data["findings"])
	case DriftCleared:
		msg = fmt.Sprintf("Stack %s (team %s) no longer drifts from what Horizon set", s("stack_name"), s("team_name"))
	case Test:
		msg = "Test message from Horizon: this destination receives its notifications."
	default:
		msg = string(t)
	}
	if e := s("error"); e != "" {
		msg += ": " + e
	}
	if who := s("actor_name"); who != "" {
		msg += " — by " + who
	}
	if kind == KindSlack {
		// Slack reads <…> as links and mentions (<!channel>): a name or an error line carrying
		// them would ping a channel or show a foreign link. Its documented escapes are these three.
		msg = slackEscaper.Replace(msg)
	} else if kind == KindMattermost {
		msg = mattermostEscaper.Replace(msg)
	}
	if link := s("console_url"); link != "" {
		if kind == KindSlack {
			msg += " <" + link + "|Open in Horizon>"
		} else {
			msg += " [Open in Horizon](" + link + ")"
		}
	}
	return msg
}
