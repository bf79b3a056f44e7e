package record

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"time"
)

// Codex is Codex's rollout: one JSON object a line in
// $CODEX_HOME/sessions/YYYY/MM/DD/rollout-<local time>-<session id>.jsonl (CODEX_HOME
// defaults to ~/.codex), opened by a session_meta line carrying the id. A turn is
// event_msg task_started … task_complete; the prompt is its item_completed item of type
// UserMessage (not the user-role response_items, which include the CLI's own
// <environment_context>), the answer its AgentMessage items.
type Codex struct{}

func init() { Register(Codex{}) }

// Name implements Format.
func (Codex) Name() string { return "codex" }

// Root implements Format.
func (Codex) Root(s Spec) string {
	if d := s.Env["CODEX_HOME"]; d != "" {
		return d
	}
	return filepath.Join(s.Home, ".codex")
}

// Locate implements Format: the rollout whose name ends in s.SessionID, else the newest
// rollout of the spawn's day (or today) written at or after s.Spawned.
func (c Codex) Locate(s Spec) (string, error) {
	base := filepath.Join(c.Root(s), "sessions")
	days := []time.Time{time.Now(), s.Spawned}
	if s.SessionID != "" {
		for _, d := range days {
			m, _ := filepath.Glob(filepath.Join(base, d.Format("2006/01/02"), "rollout-*-"+filepath.Base(s.SessionID)+".jsonl"))
			if len(m) > 0 {
				return m[0], nil
			}
		}
		return "", ErrNotYet
	}
	for _, d := range days {
		if p, err := newestSince(filepath.Join(base, d.Format("2006/01/02")), ".jsonl", s); err == nil {
			return p, nil
		}
	}
	return "", ErrNotYet
}

// Names implements Namer: rollout-<local time>-<session id>.jsonl.
func (Codex) Names(file, sessionID string) bool {
	return sessionID != "" && strings.HasSuffix(filepath.Base(file), "-"+sessionID+".jsonl")
}

// Dirs implements Dirser: the rollout appears in the folder of its day.
func (c Codex) Dirs(s Spec) []string {
	base := filepath.Join(c.Root(s), "sessions")
	return []string{filepath.Join(base, time.Now().Format("2006/01/02")), filepath.Join(base, s.Spawned.Format("2006/01/02"))}
}

type codexLine struct {
	Timestamp string `json:"timestamp"`
	Type      string `json:"type"`
	Payload   *struct {
		Type string `json:"type"`
		ID   string `json:"id"`
		Cwd  string `json:"cwd"`
		Item *struct {
			Type    string `json:"type"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"item"`
	} `json:"payload"`
}

const codexPending = "turn_pending"

// Parse implements Format. Codex writes task_started before the prompt's item; the
// TurnStarted event follows the UserMessage, as for the other formats.
func (Codex) Parse(dst []Event, st *State, line []byte) ([]Event, error) {
	var l codexLine
	if err := json.Unmarshal(line, &l); err != nil || l.Type == "" || l.Payload == nil {
		if st.Line == 1 && (err == nil || !json.Valid(line)) {
			return dst, ErrUnknownFormat
		}
		return dst, nil
	}
	if st.Line == 1 && l.Type != "session_meta" {
		return dst, ErrUnknownFormat
	}
	at, _ := time.Parse(time.RFC3339Nano, l.Timestamp)
	ev := Event{SessionID: st.SessionID, At: at, Line: st.Line}
	p := l.Payload
	if l.Type == "session_meta" {
		if st.SessionID == "" && p.ID != "" {
			st.SessionID, ev.SessionID, ev.Dir = p.ID, p.ID, p.Cwd
			dst = append(dst, withKind(ev, SessionKnown))
		}
		return dst, nil
	}
	if l.Type != "event_msg" {
		return dst, nil
	}
	switch p.Type {
	case "task_started":
		setAny(st, codexPending, "1")
	case "task_complete", "turn_aborted":
		setAny(st, codexPending, "")
		if st.InTurn {
			st.InTurn = false
			dst = append(dst, withKind(ev, TurnEnded))
		}
	case "item_completed":
		if p.Item == nil || (p.Item.Type != "UserMessage" && p.Item.Type != "AgentMessage") {
			return dst, nil
		}
		var b strings.Builder
		for _, c := range p.Item.Content {
			b.WriteString(c.Text)
		}
		ev.Text, ev.Truncated = Clip(b.String())
		if p.Item.Type == "AgentMessage" {
			if ev.Text != "" {
				dst = append(dst, withKind(ev, AssistantText))
			}
			return dst, nil
		}
		dst = append(dst, withKind(ev, UserMessage))
		if st.Any[codexPending] != "" && !st.InTurn {
			setAny(st, codexPending, "")
			st.InTurn = true
			ev.Text, ev.Truncated = "", false
			dst = append(dst, withKind(ev, TurnStarted))
		}
	}
	return dst, nil
}

func setAny(st *State, k, v string) {
	if st.Any == nil {
		st.Any = make(map[string]string, 1)
	}
	st.Any[k] = v
}
