package web

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/controlmode"
)

// fakeKeyboard records what it was asked to type.
type fakeKeyboard struct {
	mu    sync.Mutex
	typed [][]string
	err   error
}

func (f *fakeKeyboard) Type(_ context.Context, _ nudge.Runtime, lines []string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	f.typed = append(f.typed, lines)
	return nil
}

func (f *fakeKeyboard) got() [][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]string(nil), f.typed...)
}

// keysRig is a rig whose daemon offers the terminal and typing, with one runtime, and
// keeps the audit records.
func keysRig(t *testing.T) (*rig, *fakeKeyboard, func() []nudge.AuditRecord) {
	r := newRig(t, Config{})
	kb := &fakeKeyboard{}
	var mu sync.Mutex
	var recs []nudge.AuditRecord
	r.s.deps.Terminal, r.s.deps.Keys = &fakeTerminal{}, kb
	r.s.deps.Audit = func(rec nudge.AuditRecord) { mu.Lock(); recs = append(recs, rec); mu.Unlock() }
	r.s.deps.Runtimes = fakeRuntimes{"rt_w1.a": {RuntimeID: "rt_w1.a", WorkspaceID: "w1", PaneID: "%3", PID: 42}}
	r.ts.Config.Handler = r.s.Handler()
	return r, kb, func() []nudge.AuditRecord {
		mu.Lock()
		defer mu.Unlock()
		return append([]nudge.AuditRecord(nil), recs...)
	}
}

const someKeys = `{"keys":[{"text":"ls"},{"key":"Escape"},{"key":"C-c"},{"key":"Up"}]}`

// TestKeysOnlyTheTypeScope: only a device paired with the type scope may type, and its
// page is told so (whoami); every other scope is refused (403), its try audited, and
// nothing is typed. A cross-site request is refused before anything is read.
func TestKeysOnlyTheTypeScope(t *testing.T) {
	r, kb, audit := keysRig(t)
	for _, scope := range []string{"read", "answer", "trigger", "operate"} {
		c := r.client()
		c.pair(scope)
		if _, body := c.do("GET", "/api/v1/whoami", ""); !strings.Contains(body, `"typing":false`) {
			t.Errorf("%s: whoami %s", scope, body)
		}
		if resp, body := c.do("POST", "/api/v1/runtimes/rt_w1.a/keys", someKeys); resp.StatusCode != 403 {
			t.Errorf("%s: keys: %d %s", scope, resp.StatusCode, body)
		}
	}
	if got := kb.got(); len(got) != 0 {
		t.Fatalf("typed for a device without the type verb: %q", got)
	}
	refused := 0
	for _, rec := range audit() {
		if rec.Event == "terminal_keys_refused" && strings.HasPrefix(rec.Subject, "web:t#") && rec.RuntimeID == "rt_w1.a" {
			refused++
		}
	}
	if refused != 4 {
		t.Errorf("refused tries audited: %d, want 4: %+v", refused, audit())
	}

	c := r.client()
	c.pair("type")
	if _, body := c.do("GET", "/api/v1/whoami", ""); !strings.Contains(body, `"typing":true`) {
		t.Errorf("type: whoami %s", body)
	}
	c.origin = "https://evil.example"
	if resp, body := c.do("POST", "/api/v1/runtimes/rt_w1.a/keys", someKeys); resp.StatusCode != 403 || len(kb.got()) != 0 {
		t.Errorf("cross-site keys: %d %s, typed %q", resp.StatusCode, body, kb.got())
	}
	c.origin = r.ts.URL
	if resp, body := c.do("POST", "/api/v1/runtimes/rt_w1.a/keys", someKeys); resp.StatusCode != 200 {
		t.Fatalf("type: keys: %d %s", resp.StatusCode, body)
	}
	if got := kb.got(); len(got) != 1 || len(got[0]) != 2 {
		t.Fatalf("typed: %q", got)
	}
	recs := audit()
	last := recs[len(recs)-1]
	if last.Event != "terminal_keys" || !strings.HasPrefix(last.Subject, "web:t#") || last.Reason != "typed in the web view's terminal: 2 characters, Escape, C-c, Up" {
		t.Errorf("audit: %+v", last)
	}
	if strings.Contains(last.Reason, "ls") {
		t.Errorf("the audit record holds the typed text: %q", last.Reason)
	}
}

// TestKeysRefusedTypingNotSent: a refusal of the daemon's keyboard (nudge is typing a
// prompt there) reaches the page with its code, audited as refused.
func TestKeysRefusedTypingNotSent(t *testing.T) {
	r, kb, audit := keysRig(t)
	kb.err = nudge.NewError(nudge.Conflict, "nudge is typing a prompt into this pane now")
	c := r.client()
	c.pair("type")
	resp, body := c.do("POST", "/api/v1/runtimes/rt_w1.a/keys", someKeys)
	var e struct {
		Code string `json:"error_code"`
	}
	if json.Unmarshal([]byte(body), &e); resp.StatusCode != 409 || e.Code != "CONFLICT" {
		t.Errorf("keys: %d %s", resp.StatusCode, body)
	}
	recs := audit()
	if len(recs) == 0 || recs[len(recs)-1].Event != "terminal_keys_refused" {
		t.Errorf("audit: %+v", recs)
	}
}

// TestKeysOtherWorkspace: a type device of w1 cannot type into w2 (answered as unknown).
func TestKeysOtherWorkspace(t *testing.T) {
	r, kb, _ := keysRig(t)
	r.s.deps.Runtimes = fakeRuntimes{"rt_w2.a": {RuntimeID: "rt_w2.a", WorkspaceID: "w2", PaneID: "%3"}}
	r.admin.Workspaces = []string{"w1"}
	c := r.client()
	c.pair("type")
	if resp, body := c.do("POST", "/api/v1/runtimes/rt_w2.a/keys", someKeys); resp.StatusCode != 404 || len(kb.got()) != 0 {
		t.Errorf("keys into w2: %d %s, typed %q", resp.StatusCode, body, kb.got())
	}
}

func TestKeyLines(t *testing.T) {
	rt := nudge.Runtime{RuntimeID: "rt", PaneID: "%3", PID: 42}
	guard := func(cmd string) string {
		l, err := controlmode.IfPane("%3", 42, cmd)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	for i, tt := range []struct {
		keys  []Key
		lines []string
		what  string
	}{
		{[]Key{{Text: "hé 'x'; kill-server"}}, []string{guard(`send-keys -t '%3' -l -- 'hé '\''x'\''; kill-server'`)}, "19 characters"},
		{[]Key{{Key: "Escape"}, {Key: "Tab"}, {Key: "C-c"}, {Key: "Up"}}, []string{guard("send-keys -t '%3' Escape Tab C-c Up")}, "Escape, Tab, C-c, Up"},
		{[]Key{{Text: "a"}, {Key: "Enter"}, {Text: "b"}}, []string{guard("send-keys -t '%3' -l -- 'a'"), guard("send-keys -t '%3' Enter"),
			guard("send-keys -t '%3' -l -- 'b'")}, "1 character, Enter, 1 character"},
	} {
		lines, what, err := keyLines(rt, tt.keys)
		if err != nil || strings.Join(lines, "\n") != strings.Join(tt.lines, "\n") || what != tt.what {
			t.Errorf("#%d: got %q %q %v, want %q %q", i, lines, what, err, tt.lines, tt.what)
		}
	}
	for i, keys := range [][]Key{
		nil,
		{{Text: "a\x1b[2J"}},
		{{Text: "line\n"}},
		{{Text: "\x7f"}},
		{{Text: "\u009b"}},
		{{Text: "\xff"}},
		{{Key: "Enter; kill-server"}},
		{{Key: "kill-server"}},
		{{Key: "C-c", Text: "x"}},
		{{}},
		{{Text: strings.Repeat("x", maxKeysText+1)}},
		make([]Key, maxKeys+1),
	} {
		if lines, _, err := keyLines(rt, keys); err == nil {
			t.Errorf("#%d: %q accepted: %q", i, keys, lines)
		}
	}
}
