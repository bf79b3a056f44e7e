package tui

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/api"
	"github.com/nudgehq/nudge/cmd/nudge/events"
)

func wire(t *testing.T, typ string, v any) wireEvent {
	t.Helper()
	b, err := json.Marshal(events.Event{Type: typ, Trigger: v})
	if typ == "runtime" {
		b, err = json.Marshal(events.Event{Type: typ, Runtime: v})
	}
	if typ == "readiness" || typ == "alert" {
		b, err = json.Marshal(events.Event{Type: typ, Detail: rawJSON(t, v)})
	}
	if err != nil {
		t.Fatal(err)
	}
	var ev wireEvent
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatal(err)
	}
	return ev
}

func rawJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestWatchModelFollowsEvents(t *testing.T) {
	m := newWatchModel()
	now := time.Now()
	m.applySnapshot(watchSnapshot{runtimes: []api.Runtime{
		{Runtime: nudge.Runtime{RuntimeID: "rt_w.b", WorkspaceID: "w", Role: "b", Status: "ready", Readiness: "READY"}, QueueDepth: 2},
		{Runtime: nudge.Runtime{RuntimeID: "rt_w.a", WorkspaceID: "w", Role: "a", Status: "ready", Readiness: "BUSY"}},
	}}, now)
	if m.sel != "rt_w.a" || !m.connected {
		t.Fatalf("selection %q connected %v", m.sel, m.connected)
	}
	m.applyEvent(wire(t, "readiness", map[string]any{"runtime_id": "rt_w.b", "readiness": "NEEDS_CONFIRMATION", "operator_busy": true}), now)
	if rt, _ := m.fleet.Runtime("rt_w.b"); rt.Readiness != "NEEDS_CONFIRMATION" || !rt.OperatorBusy {
		t.Fatalf("readiness not applied: %+v", rt)
	}
	tr := api.Trigger{TriggerID: "d1", WorkspaceID: "w", Agent: "b", RuntimeID: "rt_w.b", State: "deferred", CreatedAt: now}
	if got := m.applyEvent(wire(t, "trigger", tr), now); got != "rt_w.b" {
		t.Fatalf("touched %q", got)
	}
	if m.fleet.Deferred("rt_w.b") != "d1" || m.depth("rt_w.b") != 1 || last(m, "rt_w.b").TriggerID != "d1" {
		t.Fatalf("deferred %v depth %d", m.fleet.Deferred("rt_w.b"), m.depth("rt_w.b"))
	}
	m.move(1)
	if m.sel != "rt_w.b" {
		t.Fatalf("move: %q", m.sel)
	}
	tr.State, tr.Result, tr.Closed = "acked", "delivered", true
	m.applyEvent(wire(t, "trigger", tr), now)
	if m.fleet.Deferred("rt_w.b") != "" || m.depth("rt_w.b") != 0 || last(m, "rt_w.b").State != "acked" {
		t.Fatalf("after ack: deferred %v depth %d", m.fleet.Deferred("rt_w.b"), m.depth("rt_w.b"))
	}
	m.applyEvent(wire(t, "alert", api.Alert{Kind: "timeout_ratio", Message: "too many timeouts"}), now)
	if m.alert != "too many timeouts" {
		t.Fatalf("alert %q", m.alert)
	}
	m.applyEvent(wire(t, "runtime", nudge.Runtime{RuntimeID: "rt_w.b", WorkspaceID: "w", Role: "b", Status: "paused", Paused: true}), now)
	if rt, _ := m.fleet.Runtime("rt_w.b"); !rt.Paused || rt.QueueDepth != 2 || apiStateWord(rt) != "PAUSED" {
		t.Fatalf("a runtime event: %+v", rt)
	}
	m.applyEvent(wire(t, "runtime", nudge.Runtime{RuntimeID: "rt_w.b", WorkspaceID: "w", Role: "b", Status: "deregistered"}), now)
	if _, ok := m.fleet.Runtime("rt_w.b"); ok || m.sel != "rt_w.a" {
		t.Fatalf("deregistered runtime kept; sel %q", m.sel)
	}
}

// The runtime page lists triggers newest first whatever order the daemon answered in,
// so at 80x24 the newest are the ones kept when the list is cut.
func TestWatchHistoryNewestFirst(t *testing.T) {
	m := newWatchModel()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var ts []api.Trigger
	for i := range 5 {
		ts = append(ts, api.Trigger{TriggerID: fmt.Sprint("t", i), CreatedAt: t0.Add(time.Duration(i) * time.Second)})
	}
	m.setHistory(ts) // oldest first, as GET /v1/triggers?newest=1 answers
	for i, want := range []string{"t4", "t3", "t2", "t1", "t0"} {
		if m.history[i].TriggerID != want {
			t.Fatalf("#%d: got %s, want %s", i, m.history[i].TriggerID, want)
		}
	}
}

func TestWatchGroupsFiltersSorts(t *testing.T) {
	m := newWatchModel()
	now := time.Now()
	rt := func(ws, role, readiness string) api.Runtime {
		return api.Runtime{Runtime: nudge.Runtime{RuntimeID: "rt_" + ws + "." + role, WorkspaceID: ws, Role: role, Agent: "codex", Status: "ready", Readiness: nudge.Readiness(readiness)}}
	}
	m.applySnapshot(watchSnapshot{runtimes: []api.Runtime{rt("b", "x", "READY"), rt("a", "z", "NEEDS_CONFIRMATION"), rt("a", "y", "BUSY")}}, now)
	var got []string
	for _, r := range m.rows() {
		if r.rt == nil {
			got = append(got, fmt.Sprintf("[%s %d]", r.workspace, r.count))
		} else {
			got = append(got, r.rt.Role)
		}
	}
	if s := fmt.Sprint(got); s != "[[a 2] y z [b 1] x]" {
		t.Fatalf("rows by name: %s", s)
	}
	m.sort = sortState
	if o := m.order(); o[0].Role != "z" || o[1].Role != "y" {
		t.Fatalf("by state: %s %s", o[0].Role, o[1].Role)
	}
	m.filter = "ready b"
	m.fixSel()
	if o := m.order(); len(o) != 1 || o[0].Role != "x" || m.sel != "rt_b.x" {
		t.Fatalf("filter: %v sel %s", o, m.sel)
	}
	m.filter = "nothing"
	if len(m.rows()) != 0 {
		t.Fatal("filter kept rows")
	}
}

func TestWidthTruncatePad(t *testing.T) {
	for i, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"日本語のテスト 🚀 done", 40, "日本語のテスト 🚀 done"},
		{"日本語のテスト 🚀 done", 8, "日本語…"},
		{"日本語", 5, "日本…"},
		{"abc", 3, "abc"},
		{"abcd", 3, "ab…"},
		{"é", 1, "é"},
	} {
		if got := Truncate(c.s, c.n); got != c.want {
			t.Errorf("#%d: Truncate(%q, %d) = %q, want %q", i, c.s, c.n, got, c.want)
		}
		if w := Width(Truncate(c.s, c.n)); w > c.n {
			t.Errorf("#%d: width %d > %d", i, w, c.n)
		}
	}
	if w := Width("日本語のテスト 🚀 done"); w != 22 {
		t.Errorf("width %d, want 22", w)
	}
	if p := pad("日本", 6); p != "日本  " {
		t.Errorf("pad %q", p)
	}
}

func TestWrap(t *testing.T) {
	got := wrap("abcdefghij日本", 4, 3)
	if fmt.Sprint(got) != "[abcd efg hij 日 本]" {
		t.Errorf("wrap: %q", got)
	}
	if got := wrap("", 4, 3); len(got) != 1 || got[0] != "" {
		t.Errorf("wrap empty: %q", got)
	}
}

// A runtime record's dialog field is kept while it is there and dropped when it goes.
func TestWatchDialogFromRuntimeRecords(t *testing.T) {
	m := newWatchModel()
	m.applySnapshot(watchSnapshot{runtimes: []api.Runtime{{Runtime: nudge.Runtime{RuntimeID: "rt_w.a", WorkspaceID: "w", Role: "a"}}}}, time.Now())
	with := `{"type":"runtime","runtime":{"runtime_id":"rt_w.a","workspace_id":"w","role":"a","status":"ready","readiness":"NEEDS_CONFIRMATION",
		"dialog":{"dialog_id":"d1","title":"Run command?","text":"rm -rf build","options":[{"key":"y","label":"Yes"},{"key":"n","label":"No"}],"shown_at":"2026-01-02T03:04:05Z"}}}`
	var ev wireEvent
	if err := json.Unmarshal([]byte(with), &ev); err != nil {
		t.Fatal(err)
	}
	m.applyEvent(ev, time.Now())
	d := m.dialog("rt_w.a")
	if d == nil || d.DialogID != "d1" || len(d.Options) != 2 || d.Options[1].Label != "No" || d.ShownAt.IsZero() {
		t.Fatalf("dialog: %+v", d)
	}
	m.applyEvent(wire(t, "runtime", nudge.Runtime{RuntimeID: "rt_w.a", WorkspaceID: "w", Role: "a", Status: "ready"}), time.Now())
	if m.dialog("rt_w.a") != nil {
		t.Fatal("the dialog outlived its record")
	}
}

func last(m *watchModel, id string) api.Trigger {
	t, _ := m.fleet.Last(id)
	return t
}
