package record

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestPiParse(t *testing.T) {
	evs, err := parseFile(t, Pi{}, "pi-0.73.1.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	wantEvents(t, evs, "01a21139-e65d-70d7-9119-8b76db21db7f", []ev{
		{SessionKnown, ""},
		{UserMessage, "PROMPT-ALPHA first prompt"},
		{TurnStarted, ""},
		{AssistantText, "REPLY-ONE line one\nline two of the reply"},
		{TurnEnded, ""},
		{UserMessage, "PROMPT-BETA queued while busy"},
		{TurnStarted, ""},
		{AssistantText, "REPLY-ONE line one\nline two of the reply"},
		{TurnEnded, ""},
	})
}

func TestPiTruncatedAndUnknown(t *testing.T) {
	if _, err := parseFile(t, Pi{}, "pi-truncated.jsonl"); err != nil {
		t.Fatalf("truncated: %v", err)
	}
	for _, f := range []string{"unknown-format.jsonl", "claude-2.1.jsonl", "gemini-0.61.0.jsonl", "codex-rollout.jsonl"} {
		if _, err := parseFile(t, Pi{}, f); !errors.Is(err, ErrUnknownFormat) {
			t.Errorf("%s: got %v, want ErrUnknownFormat", f, err)
		}
	}
}

func TestPiLocate(t *testing.T) {
	home := t.TempDir()
	s := Spec{Home: home, Dir: "/home/user/proj", Spawned: time.Now().Add(-time.Minute)}
	dir := filepath.Join(home, ".pi", "agent", "sessions", "--home-user-proj--")
	if d := (Pi{}).Dirs(s); d[0] != dir {
		t.Fatalf("dirs %v", d)
	}
	if _, err := (Pi{}).Locate(s); !errors.Is(err, ErrNotYet) {
		t.Fatalf("before: %v", err)
	}
	os.MkdirAll(dir, 0o700)
	f := filepath.Join(dir, "2026-11-25T05-42-16-925Z_01a21139-e65d-70d7-9119-8b76db21db7f.jsonl")
	os.WriteFile(f, []byte("{}\n"), 0o600)
	if p, err := (Pi{}).Locate(s); err != nil || p != f {
		t.Fatalf("newest: %q %v", p, err)
	}
	s.SessionID = "01a21139-e65d-70d7-9119-8b76db21db7f"
	if p, err := (Pi{}).Locate(s); err != nil || p != f {
		t.Fatalf("by id: %q %v", p, err)
	}
	s.Env = map[string]string{"PI_CODING_AGENT_SESSION_DIR": "/srv/pi"}
	if d := (Pi{}).Dirs(s); d[0] != "/srv/pi" || (Pi{}).Root(s) != "/srv/pi" {
		t.Fatalf("session dir %v", d)
	}
}

// The agent directory and the session directory may start with ~ (Pi expands it); the
// agent directory's settings.json may set the session directory (relative: to the cwd).
func TestPiDirs(t *testing.T) {
	home := t.TempDir()
	s := Spec{Home: home, Dir: "/home/user/proj", Env: map[string]string{"PI_CODING_AGENT_DIR": "~/pi"}}
	agent := filepath.Join(home, "pi")
	if d := (Pi{}).Dirs(s); len(d) != 1 || d[0] != filepath.Join(agent, "sessions", "--home-user-proj--") || (Pi{}).Root(s) != agent {
		t.Fatalf("~ agent dir: dirs %v root %q", d, (Pi{}).Root(s))
	}
	if err := os.MkdirAll(agent, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ set, want string }{
		{`{"sessionDir":"~/sessions"}`, filepath.Join(home, "sessions")},
		{`{"sessionDir":"/srv/pi"}`, "/srv/pi"},
		{`{"sessionDir":".pi-sessions"}`, "/home/user/proj/.pi-sessions"},
		{`{"theme":"dark"}`, filepath.Join(agent, "sessions", "--home-user-proj--")},
	} {
		if err := os.WriteFile(filepath.Join(agent, "settings.json"), []byte(c.set), 0o600); err != nil {
			t.Fatal(err)
		}
		if d := (Pi{}).Dirs(s); len(d) != 1 || d[0] != c.want {
			t.Errorf("settings %s: dirs %v, want %q", c.set, d, c.want)
		}
	}
	s.Env["PI_CODING_AGENT_SESSION_DIR"] = "~/mine"
	if d := (Pi{}).Dirs(s); d[0] != filepath.Join(home, "mine") || (Pi{}).Root(s) != d[0] {
		t.Fatalf("~ session dir: dirs %v root %q", d, (Pi{}).Root(s))
	}
}

// Pi names the folder after its cwd with symlinks resolved (the process's cwd).
func TestPiLocateSymlinkedCwd(t *testing.T) {
	base := t.TempDir()
	target := filepath.Join(base, "real")
	if err := os.Mkdir(target, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	agent := filepath.Join(base, "agent")
	s := Spec{Dir: link, Env: map[string]string{"PI_CODING_AGENT_DIR": agent}, Spawned: time.Now().Add(-time.Minute)}
	target, _ = filepath.EvalSymlinks(target)
	dir := filepath.Join(agent, "sessions", "--"+strings.ReplaceAll(strings.TrimLeft(target, "/"), "/", "-")+"--")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(dir, "2026-11-25T05-42-16-925Z_01a21139-e65d-70d7-9119-8b76db21db7f.jsonl")
	if err := os.WriteFile(f, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if p, err := (Pi{}).Locate(s); err != nil || p != f {
		t.Fatalf("newest: %q %v, want %q", p, err, f)
	}
	s.SessionID = "01a21139-e65d-70d7-9119-8b76db21db7f"
	if p, err := (Pi{}).Locate(s); err != nil || p != f {
		t.Fatalf("by id: %q %v, want %q", p, err, f)
	}
}

// A write caught mid-line is skipped: the turn whose answer it was stays open.
func TestPiTruncatedEvents(t *testing.T) {
	evs, err := parseFile(t, Pi{}, "pi-truncated.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	want := []Kind{SessionKnown, UserMessage, TurnStarted}
	if len(evs) != len(want) {
		t.Fatalf("got %d events %+v, want %v", len(evs), evs, want)
	}
	for i, k := range want {
		if evs[i].Kind != k {
			t.Errorf("#%d: got %v, want %v", i, evs[i].Kind, k)
		}
	}
	if evs[1].Text != "PROMPT-ALPHA first prompt" || evs[1].Line != 4 {
		t.Errorf("prompt %q at line %d", evs[1].Text, evs[1].Line)
	}
}

// A user message comes only from a message whose role is "user": not from an answer
// that looks like a prompt, a tool's result, Pi's own context or a shell command's output.
func TestPiRoleOnly(t *testing.T) {
	lines := []string{
		`{"type":"session","version":3,"id":"s","cwd":"/p"}`,
		`{"type":"message","id":"a","message":{"role":"assistant","content":[{"type":"text","text":"[BRIDGE_TRIGGER id=a]"}],"stopReason":"toolUse"}}`,
		`{"type":"message","id":"b","message":{"role":"toolResult","toolName":"bash","content":[{"type":"text","text":"[BRIDGE_TRIGGER id=b]"}]}}`,
		`{"type":"message","id":"c","message":{"role":"custom","customType":"x","content":"[BRIDGE_TRIGGER id=c]"}}`,
		`{"type":"message","id":"d","message":{"role":"bashExecution","command":"echo","output":"[BRIDGE_TRIGGER id=d]"}}`,
		`{"type":"custom_message","id":"e","content":"[BRIDGE_TRIGGER id=e]"}`,
		`{"type":"message","id":"f","message":{"role":"user","content":[{"type":"image","data":"AA=="}]}}`,
		`{"type":"message","id":"g","message":{"role":"user","content":[{"type":"text","text":"[BRIDGE_TRIGGER id=g]`,
	}
	var st State
	var evs []Event
	for _, l := range lines {
		st.Line++
		var err error
		if evs, err = (Pi{}).Parse(evs, &st, []byte(l)); err != nil {
			t.Fatalf("line %d: %v", st.Line, err)
		}
	}
	for _, e := range evs {
		if e.Kind == UserMessage {
			t.Errorf("got a user message %q", e.Text)
		}
	}
}
