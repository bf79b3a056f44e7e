package record

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Gemini is Gemini CLI's chat recording (0.61): JSON Lines in
// $GEMINI_CLI_HOME/.gemini/tmp/<project>/chats/session-<YYYY-MM-DDTHH-MM>-<first 8 of the
// session id>.jsonl (GEMINI_CLI_HOME defaults to the home directory), <project> being the
// short name ~/.gemini/projects.json ({"projects": {"<cwd>": "<name>"}}) gives the working
// directory. `--session-id UUID` names the session at launch. The first line is a header
// (sessionId, projectHash, startTime); a prompt is a top-level line of type "user" (the
// CLI's own <session_context> message comes inside a {"$set": ...} line and is not one),
// written when its turn starts; the answer is a line of type "gemini" whose content is the
// reply, written when it is complete. Gemini writes no turn boundary of its own: a turn
// starts with its prompt's line and ends with a "gemini" line that calls no tool.
type Gemini struct{}

func init() { Register(Gemini{}) }

// Name implements Format.
func (Gemini) Name() string { return "gemini" }

// Root implements Format.
func (Gemini) Root(s Spec) string {
	if d := s.Env["GEMINI_CLI_HOME"]; d != "" {
		return filepath.Join(d, ".gemini")
	}
	return filepath.Join(s.Home, ".gemini")
}

// geminiProject is the short name Gemini CLI gave dir, from projects.json; "" if none yet.
func (g Gemini) geminiProject(s Spec) string {
	b, err := os.ReadFile(filepath.Join(g.Root(s), "projects.json"))
	if err != nil || len(b) > 4<<20 {
		return ""
	}
	var reg struct {
		Projects map[string]string `json:"projects"`
	}
	if json.Unmarshal(b, &reg) != nil {
		return ""
	}
	name := reg.Projects[filepath.Clean(s.Dir)]
	if name == "" || strings.ContainsAny(name, `/\`) || name == "." || name == ".." {
		return ""
	}
	return name
}

// Dirs implements Dirser: the chats folder of the project once it has a name, else the
// folder the project folders appear in.
func (g Gemini) Dirs(s Spec) []string {
	if p := g.geminiProject(s); p != "" {
		return []string{filepath.Join(g.Root(s), "tmp", p, "chats")}
	}
	return []string{filepath.Join(g.Root(s), "tmp")}
}

// Locate implements Format: the session named by s.SessionID (its first 8 characters end
// the file name), else the newest session of the project written at or after s.Spawned.
func (g Gemini) Locate(s Spec) (string, error) {
	p := g.geminiProject(s)
	if p == "" {
		return "", ErrNotYet
	}
	dir := filepath.Join(g.Root(s), "tmp", p, "chats")
	if id := filepath.Base(s.SessionID); s.SessionID != "" && len(id) >= 8 {
		m, _ := filepath.Glob(filepath.Join(dir, "session-*-"+id[:8]+".jsonl"))
		if len(m) == 0 {
			return "", ErrNotYet
		}
		return m[len(m)-1], nil
	}
	return newestSince(dir, ".jsonl", s.Spawned)
}

type geminiLine struct {
	SessionID   string          `json:"sessionId"`
	ProjectHash string          `json:"projectHash"`
	Set         json.RawMessage `json:"$set"`
	Type        string          `json:"type"`
	Timestamp   string          `json:"timestamp"`
	Content     json.RawMessage `json:"content"`
	ToolCalls   []any           `json:"toolCalls"`
}

// Parse implements Format.
func (Gemini) Parse(dst []Event, st *State, line []byte) ([]Event, error) {
	var l geminiLine
	if err := json.Unmarshal(line, &l); err != nil {
		if st.Line == 1 {
			return dst, ErrUnknownFormat
		}
		return dst, nil
	}
	at, _ := time.Parse(time.RFC3339Nano, l.Timestamp)
	ev := Event{SessionID: st.SessionID, At: at, Line: st.Line}
	if st.Line == 1 {
		if l.SessionID == "" || l.ProjectHash == "" || l.Type != "" {
			return dst, ErrUnknownFormat
		}
		st.SessionID, ev.SessionID = l.SessionID, l.SessionID
		return append(dst, withKind(ev, SessionKnown)), nil
	}
	if l.Set != nil {
		return dst, nil // the CLI's own updates (its session context, timestamps)
	}
	switch l.Type {
	case "user":
		text := geminiText(l.Content)
		if text == "" {
			return dst, nil
		}
		if st.InTurn { // the last turn ended without an answer of its own (cancelled)
			dst = append(dst, withKind(Event{SessionID: ev.SessionID, At: at, Line: st.Line}, TurnEnded))
		}
		ev.Text, ev.Truncated = Clip(text)
		dst = append(dst, withKind(ev, UserMessage))
		st.InTurn = true
		dst = append(dst, withKind(Event{SessionID: ev.SessionID, At: at, Line: st.Line}, TurnStarted))
	case "gemini":
		if text := geminiText(l.Content); text != "" {
			ev.Text, ev.Truncated = Clip(text)
			dst = append(dst, withKind(ev, AssistantText))
		}
		if len(l.ToolCalls) == 0 && st.InTurn {
			st.InTurn = false
			dst = append(dst, withKind(Event{SessionID: ev.SessionID, At: at, Line: st.Line}, TurnEnded))
		}
	}
	return dst, nil
}

// geminiText is a message's text: a string, or parts with text.
func geminiText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}
