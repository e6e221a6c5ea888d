package notify

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// The top-level fields of an incoming webhook's JSON body, as Slack and Mattermost document
// them (Slack: "Sending messages using incoming webhooks"; Mattermost: "Incoming webhooks",
// parameters). A body with a field outside them, or without text, is not theirs.
type slackBody struct {
	Text        *string         `json:"text"`
	Blocks      json.RawMessage `json:"blocks"`
	Attachments json.RawMessage `json:"attachments"`
	ThreadTS    string          `json:"thread_ts"`
	Mrkdwn      *bool           `json:"mrkdwn"`
}

type mattermostBody struct {
	Text        *string         `json:"text"`
	Channel     string          `json:"channel"`
	Username    string          `json:"username"`
	IconURL     string          `json:"icon_url"`
	IconEmoji   string          `json:"icon_emoji"`
	Attachments json.RawMessage `json:"attachments"`
	Type        string          `json:"type"`
	Props       json.RawMessage `json:"props"`
	Priority    json.RawMessage `json:"priority"`
}

// TestChatBodiesHaveTheDocumentedShape renders every event type for Slack and Mattermost and
// decodes the body strictly against the fields each documents: a non-empty text, nothing else
// unknown; Slack's text escapes &, < and > (so that an error line cannot ping a channel with
// <!channel>) and links as <url|label>; Mattermost's breaks mentions and escapes Markdown, its
// own link excepted.
func TestChatBodiesHaveTheDocumentedShape(t *testing.T) {
	t.Parallel()
	data := map[string]any{"run_id": "r1", "run_kind": "deploy", "result": "failed", "stack_id": "s1", "stack_name": "web",
		"team_id": "t1", "team_name": "ops & co", "actor_name": "ann", "from_state": "deploying", "to_state": "failed",
		"iso_id": "i1", "iso_name": "debian", "state": "built", "findings": 2, "error": "boom <!channel> a<b @channel @all [x](https://evil.example) **b**",
		"at": time.Now().UTC().Format(time.RFC3339)}
	for _, typ := range []EventType{RunFinished, ActionFinished, StackStateChanged, ISOBuilt, ISOFailed, DriftFound, DriftCleared, Test} {
		for _, kind := range []Kind{KindSlack, KindMattermost} {
			body, err := Body(kind, Event{ID: "e1", Type: typ, At: time.Now(), Data: data}, "https://console.example.test")
			if err != nil {
				t.Fatal(err)
			}
			dec := json.NewDecoder(bytes.NewReader(body))
			dec.DisallowUnknownFields()
			var text *string
			if kind == KindSlack {
				var b slackBody
				err, text = dec.Decode(&b), b.Text
			} else {
				var b mattermostBody
				err, text = dec.Decode(&b), b.Text
			}
			if err != nil || text == nil || strings.TrimSpace(*text) == "" {
				t.Errorf("%s %s: %s is not a documented body with text (%v)", kind, typ, body, err)
				continue
			}
			msg := *text
			if kind == KindSlack {
				if strings.Contains(msg, "<!channel>") || strings.Contains(msg, "a<b") || strings.Contains(msg, "ops & co") {
					t.Errorf("slack %s: unescaped control characters in %q", typ, msg)
				}
				if !strings.HasSuffix(msg, "|Open in Horizon>") || !strings.Contains(msg, "<https://console.example.test/") {
					t.Errorf("slack %s: no <url|label> link in %q", typ, msg)
				}
			} else {
				if !strings.HasSuffix(msg, ")") || !strings.Contains(msg, " [Open in Horizon](https://console.example.test/") {
					t.Errorf("mattermost %s: no Markdown link in %q", typ, msg)
				}
				if strings.Contains(msg, "@channel") || strings.Contains(msg, "@all") || strings.Contains(msg, "[x](") || strings.Contains(msg, "**b**") {
					t.Errorf("mattermost %s: a mention or Markdown from the data survives in %q", typ, msg)
				}
			}
		}
	}
}
