package record

import (
	"encoding/json"
	"os"
	"path/filepath"
	"time"
)

// Demo is the demo agent's session record (`nudge demo-agent`, package
// cmd/nudge/demoagent): JSON Lines in .nudge-demo/<session id>.jsonl of its working
// directory. The first line is {"type":"session","id":...}; then per prompt
// {"type":"user","text":...,"at":...}, {"type":"turn_started"}, {"type":"assistant","text":...}
// and {"type":"turn_ended"}.
type Demo struct{}

func init() { Register(Demo{}) }

// Name implements Format.
func (Demo) Name() string { return "demo" }

// Root implements Format: the record folder in the runtime's directory.
func (Demo) Root(s Spec) string { return filepath.Join(s.Dir, ".nudge-demo") }

// Locate implements Format: the file named by s.SessionID, else the newest record of
// the folder written at or after s.Spawned.
func (d Demo) Locate(s Spec) (string, error) {
	if s.SessionID != "" {
		p := filepath.Join(d.Root(s), filepath.Base(s.SessionID)+".jsonl")
		if _, err := os.Lstat(p); err != nil {
			return "", ErrNotYet
		}
		return p, nil
	}
	return newestSince(d.Root(s), ".jsonl", s)
}

// Dirs implements Dirser.
func (d Demo) Dirs(s Spec) []string { return []string{d.Root(s)} }

// Parse implements Format.
func (Demo) Parse(dst []Event, st *State, line []byte) ([]Event, error) {
	var l struct {
		Type string `json:"type"`
		ID   string `json:"id"`
		Text string `json:"text"`
		At   string `json:"at"`
	}
	if json.Unmarshal(line, &l) != nil {
		if st.Line == 1 {
			return dst, ErrUnknownFormat
		}
		return dst, nil
	}
	if st.Line == 1 && l.Type != "session" {
		return dst, ErrUnknownFormat
	}
	at, _ := time.Parse(time.RFC3339Nano, l.At)
	switch l.Type {
	case "session":
		if st.SessionID == "" && l.ID != "" && len(l.ID) <= 128 {
			st.SessionID = l.ID
			dst = append(dst, Event{Kind: SessionKnown, SessionID: l.ID})
		}
	case "user":
		text, cut := Clip(l.Text)
		dst = append(dst, Event{Kind: UserMessage, SessionID: st.SessionID, Text: text, Truncated: cut, At: at})
	case "turn_started":
		st.InTurn = true
		dst = append(dst, Event{Kind: TurnStarted, SessionID: st.SessionID})
	case "assistant":
		text, cut := Clip(l.Text)
		dst = append(dst, Event{Kind: AssistantText, SessionID: st.SessionID, Text: text, Truncated: cut, At: at})
	case "turn_ended":
		if st.InTurn {
			st.InTurn = false
			dst = append(dst, Event{Kind: TurnEnded, SessionID: st.SessionID, At: at})
		}
	}
	return dst, nil
}
