package record

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"time"
)

// Pi is Pi's session file (0.73): JSON Lines in the session directory (--session-dir,
// $PI_CODING_AGENT_SESSION_DIR, else the sessionDir of $PI_CODING_AGENT_DIR/settings.json),
// else in $PI_CODING_AGENT_DIR/sessions/--<cwd without its leading slash, each / \ : as
// ->--/ (PI_CODING_AGENT_DIR defaults to ~/.pi/agent; a leading ~ in any of them is the
// home directory; the cwd is the process's, symlinks resolved), named <ISO time>_<session
// id>.jsonl. A project's own .pi/settings.json may move the directory too: that one is not
// followed (it lies in the workspace the agent writes to; --session-dir overrides it).
// The first line is {"type":"session","id":...}; a prompt is a "message" line whose
// message has the role "user" (Pi's own context messages have the role "custom"), the
// answer "assistant" lines (stopReason "stop" ends the turn, "toolUse" goes on). Pi
// writes nothing before the session's first answer is complete: the first turn is read
// when it ends; from then on each entry is appended as it is made (a queued prompt when
// its turn starts).
type Pi struct{}

func init() { Register(Pi{}) }

// Name implements Format.
func (Pi) Name() string { return "pi" }

// Root implements Format: the session directory when one is set, else the agent directory.
func (Pi) Root(s Spec) string {
	if d := piSessionDir(s); d != "" {
		return d
	}
	return piAgentDir(s)
}

// piHome expands a leading ~ as Pi does.
func piHome(s Spec, p string) string {
	if p == "~" {
		return s.Home
	}
	if strings.HasPrefix(p, "~/") {
		return filepath.Join(s.Home, p[2:])
	}
	return p
}

// piAgentDir is Pi's agent directory.
func piAgentDir(s Spec) string {
	if d := s.Env["PI_CODING_AGENT_DIR"]; d != "" {
		return piHome(s, d)
	}
	return filepath.Join(s.Home, ".pi", "agent")
}

// piSessionDir is the directory set for the sessions of every project, "" if none.
func piSessionDir(s Spec) string {
	d := s.Env["PI_CODING_AGENT_SESSION_DIR"]
	if d == "" {
		var set struct {
			SessionDir string `json:"sessionDir"`
		}
		b, err := readSmall(filepath.Join(piAgentDir(s), "settings.json"), 1<<20)
		if err != nil || json.Unmarshal(b, &set) != nil || set.SessionDir == "" {
			return ""
		}
		d = set.SessionDir
	}
	if d = piHome(s, d); !filepath.IsAbs(d) {
		d = filepath.Join(s.Dir, d)
	}
	return d
}

// piDirs are the folders s's sessions may be in: the session directory, else the
// folder of the cwd (and of the cwd with its symlinks resolved, which Pi sees).
func (p Pi) piDirs(s Spec) []string {
	if d := piSessionDir(s); d != "" {
		return []string{d}
	}
	cwds := []string{filepath.Clean(s.Dir)}
	if r, err := filepath.EvalSymlinks(s.Dir); err == nil && r != cwds[0] {
		cwds = append(cwds, r)
	}
	dirs := make([]string, 0, len(cwds))
	for _, cwd := range cwds {
		cwd = strings.TrimLeft(cwd, `/\`)
		cwd = strings.NewReplacer("/", "-", `\`, "-", ":", "-").Replace(cwd)
		dirs = append(dirs, filepath.Join(piAgentDir(s), "sessions", "--"+cwd+"--"))
	}
	return dirs
}

// Dirs implements Dirser.
func (p Pi) Dirs(s Spec) []string { return p.piDirs(s) }

// Names implements Namer: <ISO time>_<session id>.jsonl.
func (Pi) Names(file, sessionID string) bool {
	return sessionID != "" && strings.HasSuffix(filepath.Base(file), "_"+sessionID+".jsonl")
}

// Locate implements Format: the file whose name ends in _<s.SessionID>, else the newest
// session of the folder written at or after s.Spawned.
func (p Pi) Locate(s Spec) (string, error) {
	for _, dir := range p.piDirs(s) {
		if s.SessionID != "" {
			m, _ := filepath.Glob(filepath.Join(dir, "*_"+filepath.Base(s.SessionID)+".jsonl"))
			if len(m) > 0 {
				return m[len(m)-1], nil
			}
		} else if f, err := newestSince(dir, ".jsonl", s); err == nil {
			return f, nil
		}
	}
	return "", ErrNotYet
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
