package fuzz

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

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

// FuzzRecordFollow: the follower reading a record file of hostile shape (a piece repeated
// into lines longer than MaxLine, or none at all, then a user message) gives events whose
// text is within MaxText, reads the message after the long lines, and ends on Close.
func FuzzRecordFollow(f *testing.F) {
	f.Add([]byte("x"), uint32(record.MaxLine+1))
	f.Add([]byte("\n"), uint32(100000))
	f.Add([]byte(`{"type":"user","message":{"role":"user","content":"`), uint32(200000))
	f.Fuzz(func(t *testing.T, piece []byte, n uint32) {
		if len(piece) == 0 {
			return
		}
		n = min(n, uint32(3*record.MaxLine/len(piece)))
		home := t.TempDir()
		s := record.Spec{Home: home, Dir: "/w", SessionID: "s1"}
		path := filepath.Join(record.Claude{}.Dirs(s)[0], "s1.jsonl")
		os.MkdirAll(filepath.Dir(path), 0o700)
		last := `{"type":"user","sessionId":"s1","message":{"role":"user","content":"last"}}`
		body := append(append(bytes.Repeat(piece, int(n)), '\n'), last+"\n"...)
		body = append([]byte(`{"type":"user","sessionId":"s1","message":{"role":"user","content":"first"}}`+"\n"), body...)
		if err := os.WriteFile(path, body, 0o600); err != nil {
			t.Fatal(err)
		}
		r := record.Open(record.Claude{}, s, record.Options{})
		defer r.Close()
		for {
			select {
			case e, ok := <-r.Events():
				if !ok {
					return // the format was refused: fine
				}
				if len(e.Text) > record.MaxText {
					t.Fatalf("text of %d bytes", len(e.Text))
				}
				if e.Kind == record.UserMessage && e.Text == "last" {
					return
				}
			case <-time.After(time.Minute):
				t.Fatal("the message after the hostile lines was not read")
			}
		}
	})
}
