package record

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Claude is Claude Code's transcript: one JSON object a line in
// $CLAUDE_CONFIG_DIR/projects/<cwd, each character other than [A-Za-z0-9] as '-'>/<session id>.jsonl
// (CLAUDE_CONFIG_DIR defaults to ~/.claude). `--session-id UUID` names the file at launch.
// A prompt is a line of type "user" whose message has role "user" and is neither meta,
// a sidechain nor a tool result; the turn's replies are "assistant" lines whose text
// blocks are the answer, and a stop_reason other than tool_use ends the turn.
type Claude struct{}

func init() { Register(Claude{}) }

// Name implements Format.
func (Claude) Name() string { return "claude" }

// Root implements Format.
func (Claude) Root(s Spec) string {
	if d := s.Env["CLAUDE_CONFIG_DIR"]; d != "" {
		return d
	}
	return filepath.Join(s.Home, ".claude")
}

// claudeProject is the projects/ folder name Claude Code gives a working directory.
func claudeProject(dir string) string {
	b := []byte(dir)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			b[i] = '-'
		}
	}
	return string(b)
}

// Locate implements Format: the file named by s.SessionID, else the newest transcript
// of s.Dir written at or after s.Spawned.
func (c Claude) Locate(s Spec) (string, error) {
	dir := filepath.Join(c.Root(s), "projects", claudeProject(s.Dir))
	if s.SessionID != "" {
		p := filepath.Join(dir, filepath.Base(s.SessionID)+".jsonl")
		if _, err := os.Lstat(p); err != nil {
			return "", ErrNotYet
		}
		return p, nil
	}
	return newestSince(dir, ".jsonl", s)
}

// Dirs implements Dirser: the transcript appears in the project's folder.
// Names implements Namer: <session id>.jsonl.
func (Claude) Names(file, sessionID string) bool {
	return sessionID != "" && filepath.Base(file) == sessionID+".jsonl"
}

func (c Claude) Dirs(s Spec) []string {
	return []string{filepath.Join(c.Root(s), "projects", claudeProject(s.Dir))}
}

// newestSince returns the newest regular file in dir ending in ext modified at or after
// s.Spawned and not in s.Exclude.
func newestSince(dir, ext string, s Spec) (string, error) {
	t, now := s.Spawned, time.Now()
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "", ErrNotYet
	}
	var best string
	var bestT time.Time
	for _, e := range ents {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ext) || excluded(s, filepath.Join(dir, e.Name())) {
			continue
		}
		fi, err := e.Info()
		if err != nil || fi.ModTime().Before(t) || fi.ModTime().After(now.Add(time.Minute)) || !fi.ModTime().After(bestT) && best != "" {
			continue // before the spawn, written "in the future" (its time set by hand, to be the newest), or older
		}
		best, bestT = filepath.Join(dir, e.Name()), fi.ModTime()
	}
	if best == "" {
		return "", ErrNotYet
	}
	return best, nil
}

// excluded reports whether p (or the file it resolves to) is in s.Exclude.
func excluded(s Spec, p string) bool {
	if len(s.Exclude) == 0 {
		return false
	}
	if s.Exclude[p] {
		return true
	}
	r, err := filepath.EvalSymlinks(p)
	return err == nil && s.Exclude[r]
}

type claudeLine struct {
	Type        *string `json:"type"`
	SessionID   string  `json:"sessionId"`
	Timestamp   string  `json:"timestamp"`
	IsMeta      bool    `json:"isMeta"`
	IsSidechain bool    `json:"isSidechain"`
	Origin      *struct {
		Kind string `json:"kind"`
	} `json:"origin"`
	Message *struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		StopReason *string         `json:"stop_reason"`
	} `json:"message"`
}

type claudeBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// Parse implements Format.
func (Claude) Parse(dst []Event, st *State, line []byte) ([]Event, error) {
	var l claudeLine
	if err := json.Unmarshal(line, &l); err != nil || l.Type == nil {
		if st.Line == 1 && (err == nil || !json.Valid(line)) {
			return dst, ErrUnknownFormat
		}
		return dst, nil
	}
	at, _ := time.Parse(time.RFC3339Nano, l.Timestamp)
	ev := Event{SessionID: st.SessionID, At: at, Line: st.Line}
	if l.SessionID != "" && st.SessionID == "" {
		st.SessionID = l.SessionID
		ev.SessionID = l.SessionID
		dst = append(dst, withKind(ev, SessionKnown))
	}
	m := l.Message
	if m == nil || l.IsSidechain {
		return dst, nil
	}
	switch {
	case *l.Type == "user" && m.Role == "user" && (!l.IsMeta || l.Origin != nil && l.Origin.Kind == "peer"):
		// A message given through the session's messaging socket (nudge's channel) is
		// recorded as meta, from a peer: it is a prompt all the same.
		text, tool := claudeText(m.Content)
		if tool || text == "" {
			return dst, nil
		}
		ev.Text, ev.Truncated = Clip(text)
		dst = append(dst, withKind(ev, UserMessage))
		if !st.InTurn {
			st.InTurn = true
			dst = append(dst, withKind(Event{SessionID: ev.SessionID, At: at, Line: st.Line}, TurnStarted))
		}
	case *l.Type == "assistant" && m.Role == "assistant":
		if text, _ := claudeText(m.Content); text != "" {
			ev.Text, ev.Truncated = Clip(text)
			dst = append(dst, withKind(ev, AssistantText))
		}
		if m.StopReason != nil && *m.StopReason != "tool_use" && st.InTurn {
			st.InTurn = false
			dst = append(dst, withKind(Event{SessionID: ev.SessionID, At: at, Line: st.Line}, TurnEnded))
		}
	}
	return dst, nil
}

func withKind(e Event, k Kind) Event { e.Kind = k; return e }

// claudeText joins a message's text: the content is a string or an array of blocks; tool
// says a tool_result block is among them (a tool's output, not a prompt).
func claudeText(raw json.RawMessage) (text string, tool bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, false
	}
	var blocks []claudeBlock
	if json.Unmarshal(raw, &blocks) != nil {
		return "", false
	}
	var b strings.Builder
	for _, bl := range blocks {
		switch bl.Type {
		case "tool_result":
			tool = true
		case "text":
			b.WriteString(bl.Text)
		}
	}
	return b.String(), tool
}
