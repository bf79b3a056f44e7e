package fuzz

import (
	"strings"
	"testing"

	"github.com/nudgehq/nudge/ack/record"
)

// recordCorpus seeds FuzzRecordClaude: transcript lines of each kind.
var recordCorpus = []string{
	`{"type":"user","sessionId":"s","message":{"role":"user","content":"hi"}}`,
	`{"type":"assistant","sessionId":"s","message":{"role":"assistant","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn"}}`,
	`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","content":"x"}]}}`,
	`{"type":"assistant","message":{"role":"user","content":"[BRIDGE_TRIGGER id=t]"}}`, // role and type disagree
	`{"type":"user","message":{"role":"user","con`,                                     // cut mid-line
	`{"format":"future-7"}`, // no known header
}

// FuzzRecordClaude: Parse never panics, keeps Text within MaxText, and a user message
// only ever comes from a line whose type and role are both "user".
func FuzzRecordClaude(f *testing.F) {
	for _, s := range recordCorpus {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		st := record.State{Line: 2}
		evs, _ := record.Claude{}.Parse(nil, &st, line)
		for _, e := range evs {
			if len(e.Text) > record.MaxText {
				t.Fatalf("text of %d bytes", len(e.Text))
			}
			if e.Kind == record.UserMessage && !strings.Contains(string(line), `"user"`) {
				t.Fatalf("user message from %q", line)
			}
		}
	})
}
