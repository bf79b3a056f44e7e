package tui

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/api"
	"github.com/nudgehq/nudge/cmd/nudge/events"
	"github.com/nudgehq/nudge/cmd/nudge/observe"
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
	}})
	if m.sel != "rt_w.a" || !m.connected {
		t.Fatalf("selection %q connected %v", m.sel, m.connected)
	}
	m.applyEvent(wire(t, "readiness", map[string]any{"runtime_id": "rt_w.b", "readiness": "NEEDS_CONFIRMATION", "operator_busy": true}))
	if rt := m.rts["rt_w.b"]; rt.Readiness != "NEEDS_CONFIRMATION" || !rt.OperatorBusy {
		t.Fatalf("readiness not applied: %+v", rt)
	}
	tr := api.Trigger{TriggerID: "d1", WorkspaceID: "w", Agent: "b", RuntimeID: "rt_w.b", State: "deferred", CreatedAt: now}
	if got := m.applyEvent(wire(t, "trigger", tr)); got != "rt_w.b" {
		t.Fatalf("touched %q", got)
	}
	if m.deferred["rt_w.b"] != "d1" || m.depth("rt_w.b") != 1 || m.last["rt_w.b"].TriggerID != "d1" {
		t.Fatalf("deferred %v depth %d", m.deferred, m.depth("rt_w.b"))
	}
	m.move(1)
	if m.sel != "rt_w.b" {
		t.Fatalf("move: %q", m.sel)
	}
	tr.State, tr.Result, tr.Closed = "acked", "delivered", true
	m.applyEvent(wire(t, "trigger", tr))
	if m.deferred["rt_w.b"] != "" || m.depth("rt_w.b") != 0 || m.last["rt_w.b"].State != "acked" {
		t.Fatalf("after ack: deferred %v depth %d", m.deferred, m.depth("rt_w.b"))
	}
	m.applyEvent(wire(t, "alert", observe.Alert{Kind: "timeout_ratio", Message: "too many timeouts"}))
	if m.alert != "too many timeouts" {
		t.Fatalf("alert %q", m.alert)
	}
	m.applyEvent(wire(t, "runtime", nudge.Runtime{RuntimeID: "rt_w.b", WorkspaceID: "w", Role: "b", Status: "paused", Paused: true}))
	if rt := m.rts["rt_w.b"]; !rt.Paused || rt.QueueDepth != 2 || apiStateWord(rt) != "PAUSED" {
		t.Fatalf("a runtime event: %+v", rt)
	}
	m.applyEvent(wire(t, "runtime", nudge.Runtime{RuntimeID: "rt_w.b", WorkspaceID: "w", Role: "b", Status: "deregistered"}))
	if _, ok := m.rts["rt_w.b"]; ok || m.sel != "rt_w.a" {
		t.Fatalf("deregistered runtime kept; sel %q", m.sel)
	}
}
