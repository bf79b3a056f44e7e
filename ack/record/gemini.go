package record

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"time"
)

// Gemini is Gemini CLI's chat recording (0.61): JSON Lines in
// $GEMINI_CLI_HOME/.gemini/tmp/<project>/chats/session-<YYYY-MM-DDTHH-MM>-<first 8 of the
// session id>.jsonl (GEMINI_CLI_HOME defaults to the home directory), <project> being the
// short name ~/.gemini/projects.json ({"projects": {"<cwd>": "<name>"}}) gives the working
// directory. `--session-id UUID` names the session at launch. The first line is a header
// (sessionId, projectHash, startTime); then message lines (id, timestamp, type "user" |
// "gemini" | "info" ..., content), {"$set": ...} updates (whole-history rewrites among
// them: the CLI's own <session_context> message comes that way) and {"$rewindTo": id}. A
// message is appended again under its id when the CLI adds its token counts or tool
// calls: only the first line of an id is read.
//
// Gemini writes no turn boundary of its own; they are derived from when it writes. A
// prompt's user line is written when its turn starts (a queued prompt's when the last
// turn ended): it starts a turn, and ends one still open (cancelled before any answer).
// A user line holding a functionResponse is a tool's result, and one starting with
// <session_context> or <hook_context> the CLI's own context: neither is a prompt. A
// "gemini" line is written when the model's reply is complete, before any tool it called
// has run: only once they ran is it appended again with its toolCalls. So a reply without
// text is a tool call (the turn goes on) and a reply with text ends the turn; when that
// text came with a tool call (the model said what it would do), its continuation (the
// line again with toolCalls, or a tool's result) starts the turn again without a prompt.
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
	b, err := readSmall(filepath.Join(g.Root(s), "projects.json"), 4<<20)
	if err != nil {
		return ""
	}
	var reg struct {
		Projects map[string]string `json:"projects"`
	}
	if json.Unmarshal(b, &reg) != nil {
		return ""
	}
	name := reg.Projects[filepath.Clean(s.Dir)]
	if r, err := filepath.EvalSymlinks(s.Dir); name == "" && err == nil {
		name = reg.Projects[r] // the CLI's cwd is the process's, symlinks resolved
	}
	if name == "" || strings.ContainsAny(name, `/\`) || name == "." || name == ".." {
		return ""
	}
	return name
}

// Dirs implements Dirser: the chats folder of the project once it has a name, else the
// folder the project folders appear in.
// Names implements Namer: session-<time>-<the first 8 of the session id>.jsonl.
func (Gemini) Names(file, sessionID string) bool {
	return len(sessionID) >= 8 && strings.HasSuffix(filepath.Base(file), "-"+sessionID[:8]+".jsonl")
}

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
	return newestSince(dir, ".jsonl", s)
}

type geminiLine struct {
	SessionID   string            `json:"sessionId"`
	ProjectHash string            `json:"projectHash"`
	Set         json.RawMessage   `json:"$set"`
	ID          *string           `json:"id"`
	Type        string            `json:"type"`
	Timestamp   string            `json:"timestamp"`
	Content     json.RawMessage   `json:"content"`
	ToolCalls   []json.RawMessage `json:"toolCalls"`
}

// State.Any keys: the ids of the last user and gemini lines (a message appended again).
const (
	geminiLastUser  = "gemini_user"
	geminiLastReply = "gemini_reply"
)

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
	if l.Set != nil || l.ID == nil {
		return dst, nil // the CLI's own updates (its session context, timestamps), rewinds
	}
	switch l.Type {
	case "user":
		return geminiUser(dst, st, ev, &l), nil
	case "gemini":
		return geminiReply(dst, st, ev, &l), nil
	}
	return dst, nil
}

// geminiUser reads a user line: a prompt starts a turn, a tool's result continues one.
func geminiUser(dst []Event, st *State, ev Event, l *geminiLine) []Event {
	if st.Any[geminiLastUser] == *l.ID {
		return dst
	}
	setAny(st, geminiLastUser, *l.ID)
	text, tool := geminiText(l.Content)
	if tool {
		return geminiResume(dst, st, ev)
	}
	if t := strings.TrimSpace(text); t == "" || strings.HasPrefix(t, "<session_context>") || strings.HasPrefix(t, "<hook_context>") {
		return dst
	}
	if st.InTurn { // the last turn ended without an answer of its own (cancelled)
		dst = append(dst, withKind(ev, TurnEnded))
	}
	ev.Text, ev.Truncated = Clip(text)
	dst = append(dst, withKind(ev, UserMessage))
	st.InTurn = true
	ev.Text, ev.Truncated = "", false
	return append(dst, withKind(ev, TurnStarted))
}

// geminiReply reads a gemini line: its text is the answer and ends the turn; a reply
// without text is a tool call; the reply appended again with tool calls continues the turn.
func geminiReply(dst []Event, st *State, ev Event, l *geminiLine) []Event {
	if st.Any[geminiLastReply] == *l.ID {
		if len(l.ToolCalls) > 0 {
			return geminiResume(dst, st, ev)
		}
		return dst
	}
	setAny(st, geminiLastReply, *l.ID)
	text, _ := geminiText(l.Content)
	if text == "" {
		return dst
	}
	ev.Text, ev.Truncated = Clip(text)
	dst = append(dst, withKind(ev, AssistantText))
	if len(l.ToolCalls) == 0 && st.InTurn {
		st.InTurn = false
		ev.Text, ev.Truncated = "", false
		dst = append(dst, withKind(ev, TurnEnded))
	}
	return dst
}

// geminiResume starts the turn again when the record shows the agent still at a turn
// that read as ended (its reply had text, then tools ran).
func geminiResume(dst []Event, st *State, ev Event) []Event {
	if st.InTurn || st.Any[geminiLastReply] == "" {
		return dst
	}
	st.InTurn = true
	return append(dst, withKind(ev, TurnStarted))
}

type geminiPart struct {
	Text             *string         `json:"text"`
	Thought          bool            `json:"thought"`
	FunctionResponse json.RawMessage `json:"functionResponse"`
}

// geminiText is a message's visible text: the content is a string or parts (strings or
// objects; a thought is not text); tool says a functionResponse is among them.
func geminiText(raw json.RawMessage) (text string, tool bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, false
	}
	var parts []json.RawMessage
	if json.Unmarshal(raw, &parts) != nil {
		parts = []json.RawMessage{raw}
	}
	var b strings.Builder
	for _, raw := range parts {
		if json.Unmarshal(raw, &s) == nil {
			b.WriteString(s)
			continue
		}
		var p geminiPart
		if json.Unmarshal(raw, &p) != nil {
			continue
		}
		if len(p.FunctionResponse) > 0 && string(p.FunctionResponse) != "null" {
			tool = true
		}
		if p.Text != nil && !p.Thought {
			b.WriteString(*p.Text)
		}
	}
	return b.String(), tool
}
