package record

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"time"
)

// Pi is Pi's session file (0.73): JSON Lines in
// $PI_CODING_AGENT_SESSION_DIR, else $PI_CODING_AGENT_DIR/sessions/--<cwd without its
// leading slash, each / \ : as ->--/ (PI_CODING_AGENT_DIR defaults to ~/.pi/agent),
// named <ISO time>_<session id>.jsonl. The first line is {"type":"session","id":...}; a
// prompt is a "message" line whose message has the role "user", the answer "assistant"
// lines (stopReason "stop" ends the turn, "toolUse" goes on). Pi writes nothing before the
// session's first answer is complete: the first turn is read when it ends; from then on
// each entry is appended as it is made (a queued prompt when its turn starts).
type Pi struct{}

func init() { Register(Pi{}) }

// Name implements Format.
func (Pi) Name() string { return "pi" }

// Root implements Format: the agent directory, or the session directory when one is set.
func (Pi) Root(s Spec) string {
	if d := s.Env["PI_CODING_AGENT_SESSION_DIR"]; d != "" {
		return d
	}
	if d := s.Env["PI_CODING_AGENT_DIR"]; d != "" {
		return d
	}
	return filepath.Join(s.Home, ".pi", "agent")
}

// piDir is the folder of s's sessions.
func (p Pi) piDir(s Spec) string {
	if d := s.Env["PI_CODING_AGENT_SESSION_DIR"]; d != "" {
		return d
	}
	cwd := strings.TrimLeft(filepath.Clean(s.Dir), `/\`)
	cwd = strings.NewReplacer("/", "-", `\`, "-", ":", "-").Replace(cwd)
	return filepath.Join(p.Root(s), "sessions", "--"+cwd+"--")
}

// Dirs implements Dirser.
func (p Pi) Dirs(s Spec) []string { return []string{p.piDir(s)} }

// Locate implements Format: the file whose name ends in _<s.SessionID>, else the newest
// session of the directory written at or after s.Spawned.
func (p Pi) Locate(s Spec) (string, error) {
	dir := p.piDir(s)
	if s.SessionID != "" {
		m, _ := filepath.Glob(filepath.Join(dir, "*_"+filepath.Base(s.SessionID)+".jsonl"))
		if len(m) == 0 {
			return "", ErrNotYet
		}
		return m[len(m)-1], nil
	}
	return newestSince(dir, ".jsonl", s.Spawned)
}

type piLine struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	Timestamp string `json:"timestamp"`
	Message   *struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		StopReason string          `json:"stopReason"`
	} `json:"message"`
}

// Parse implements Format.
func (Pi) Parse(dst []Event, st *State, line []byte) ([]Event, error) {
	var l piLine
	if err := json.Unmarshal(line, &l); err != nil || l.Type == "" {
		if st.Line == 1 {
			return dst, ErrUnknownFormat
		}
		return dst, nil
	}
	at, _ := time.Parse(time.RFC3339Nano, l.Timestamp)
	ev := Event{SessionID: st.SessionID, At: at, Line: st.Line}
	if st.Line == 1 {
		if l.Type != "session" || l.ID == "" {
			return dst, ErrUnknownFormat
		}
		st.SessionID, ev.SessionID = l.ID, l.ID
		return append(dst, withKind(ev, SessionKnown)), nil
	}
	if l.Type != "message" || l.Message == nil {
		return dst, nil
	}
	m := l.Message
	switch m.Role {
	case "user":
		text := piText(m.Content)
		if text == "" {
			return dst, nil
		}
		ev.Text, ev.Truncated = Clip(text)
		dst = append(dst, withKind(ev, UserMessage))
		if !st.InTurn {
			st.InTurn = true
			dst = append(dst, withKind(Event{SessionID: ev.SessionID, At: at, Line: st.Line}, TurnStarted))
		}
	case "assistant":
		if text := piText(m.Content); text != "" {
			ev.Text, ev.Truncated = Clip(text)
			dst = append(dst, withKind(ev, AssistantText))
		}
		if m.StopReason != "" && m.StopReason != "toolUse" && st.InTurn {
			st.InTurn = false
			dst = append(dst, withKind(Event{SessionID: ev.SessionID, At: at, Line: st.Line}, TurnEnded))
		}
	}
	return dst, nil
}

// piText joins a message's text blocks (a string content is its text).
func piText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) != nil {
		return ""
	}
	var b strings.Builder
	for _, bl := range blocks {
		if bl.Type == "text" {
			b.WriteString(bl.Text)
		}
	}
	return b.String()
}
