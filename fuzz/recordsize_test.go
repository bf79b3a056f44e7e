package fuzz

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/nudgehq/nudge/ack"
	"github.com/nudgehq/nudge/ack/record"
)

// Hostile sizes: a record line is the agent's to write, up to record.MaxLine (the
// follower skips longer ones), with as many envelope ids as fit. Each reader's target
// builds a user message of that size from a fuzzed piece of text repeated, with fuzzed
// numbers of envelopes, and checks what the reader gives stays bounded: no event text
// over record.MaxText, no more than ack.MaxMessageIDs ids taken from one message.

// hostileText is piece repeated reps times after ids envelope lines, cut to fit a line.
func hostileText(piece string, reps, ids uint16) string {
	var b strings.Builder
	room := record.MaxLine - 1024
	for i := 0; i < int(ids) && b.Len() < room; i++ {
		b.WriteString("[BRIDGE_TRIGGER id=h" + strconv.Itoa(i) + " thread=- reason=r] x [/BRIDGE_TRIGGER]\n")
	}
	if piece != "" {
		for i := 0; i < int(reps) && b.Len() < room; i++ {
			b.WriteString(piece)
		}
	}
	s := b.String()
	if len(s) > room {
		s = s[:room]
	}
	return s
}

// sizeCorpus seeds every reader's target: (piece, reps, ids).
var sizeCorpus = []struct {
	piece     string
	reps, ids uint16
}{
	{"hi", 1, 1},
	{"x", 65535, 0},                      // one long message
	{"", 0, 65535},                       // as many envelopes as fit
	{"é\u202e\x00\n", 40000, 3000},       // multibyte and controls, both
	{strings.Repeat("y", 512), 9000, 70}, // over MaxText, just over MaxMessageIDs
}

// fuzzSizes runs a reader's target: lines(text) are the record lines of a user message
// holding text (parsed in order with one State, from line 2).
func fuzzSizes(f *testing.F, p record.Format, lines func(text string) [][]byte) {
	for _, c := range sizeCorpus {
		f.Add(c.piece, c.reps, c.ids)
	}
	f.Fuzz(func(t *testing.T, piece string, reps, ids uint16) {
		st := record.State{Line: 1}
		for _, l := range lines(hostileText(piece, reps, ids)) {
			st.Line++
			evs, _ := p.Parse(nil, &st, l)
			for _, e := range evs {
				if len(e.Text) > record.MaxText {
					t.Fatalf("%v text of %d bytes", e.Kind, len(e.Text))
				}
				if n := len(ack.EnvelopeIDs(e.Text)); n > ack.MaxMessageIDs {
					t.Fatalf("%d ids from one message", n)
				}
			}
			for k, v := range st.Any {
				if len(k)+len(v) > record.MaxLine {
					t.Fatalf("state %q holds %d bytes", k, len(v))
				}
			}
		}
	})
}

func js(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

func FuzzRecordSizeClaude(f *testing.F) {
	fuzzSizes(f, record.Claude{}, func(text string) [][]byte {
		return [][]byte{js(map[string]any{"type": "user", "sessionId": "s", "message": map[string]any{"role": "user", "content": text}})}
	})
}

func FuzzRecordSizeCodex(f *testing.F) {
	fuzzSizes(f, record.Codex{}, func(text string) [][]byte {
		return [][]byte{js(map[string]any{"type": "event_msg", "payload": map[string]any{"type": "item_completed",
			"item": map[string]any{"type": "UserMessage", "content": []any{map[string]any{"type": "text", "text": text}}}}})}
	})
}

func FuzzRecordSizeGemini(f *testing.F) {
	fuzzSizes(f, record.Gemini{}, func(text string) [][]byte {
		return [][]byte{js(map[string]any{"id": "a", "type": "user", "content": []any{map[string]any{"text": text}}})}
	})
}

func FuzzRecordSizePi(f *testing.F) {
	fuzzSizes(f, record.Pi{}, func(text string) [][]byte {
		return [][]byte{js(map[string]any{"type": "message", "message": map[string]any{"role": "user", "content": text}})}
	})
}

func FuzzRecordSizeOpenCode(f *testing.F) {
	fuzzSizes(f, record.OpenCode{}, func(text string) [][]byte {
		return [][]byte{
			[]byte(`message.updated.1 {"sessionID":"s","info":{"id":"u","role":"user"}}`),
			append([]byte("message.part.updated.1 "), js(map[string]any{"sessionID": "s",
				"part": map[string]any{"id": "p", "messageID": "u", "type": "text", "text": text}})...),
		}
	})
}
