package daemon

import (
	"github.com/nudgehq/nudge"
	eventstream "github.com/nudgehq/nudge/cmd/nudge/events"
	"github.com/nudgehq/nudge/cmd/nudge/observe"
)

// openFeed subscribes the event stream (/v1/events) to the rooms' news on the daemon's
// bus: runtime, readiness, trigger, reply, collision, fallback, dialog and alert events, each on
// its own workspace's stream. It is opened before the registry, so the stream has every
// change from the daemon's start. One client: the stream has the events in the order the
// bus took them (a receipt's change before its reply). The hub numbers and keeps them.
func openFeed(d *Daemon) *nudge.Client {
	c := nudge.NewClient(d.bus, "events", 1024)
	publish := func(ev Event) { d.hub.Publish(ev) }
	nudge.Subscribe(c, func(ev nudge.RuntimeChanged) {
		publish(Event{Type: "runtime", Workspace: ev.Runtime.WorkspaceID, Runtime: ev.Runtime})
	})
	nudge.Subscribe(c, func(ev nudge.ReadinessChanged) {
		r := eventstream.Readiness{RuntimeID: ev.RuntimeID, Readiness: ev.Readiness, Summary: ev.Summary,
			ActionsNeeded: ev.ActionsNeeded, OperatorBusy: ev.OperatorBusy}
		publish(Event{Type: "readiness", Workspace: ev.Workspace, Detail: mustJSON(r), Value: r})
	})
	nudge.Subscribe(c, func(ev nudge.TriggerChanged) {
		t := ev.Trigger
		publish(Event{Type: "trigger", Workspace: t.WorkspaceID, Trigger: t})
		if r := ev.Reply; r != nil { // the reply of its turn, recorded on its receipt
			publish(Event{Type: "reply", Workspace: t.WorkspaceID, Detail: mustJSON(map[string]any{
				"trigger_id": r.TriggerID, "runtime_id": r.RuntimeID, "turn_ended_at": r.EndedAt, "truncated": r.Truncated, "evidence": r.Evidence})})
		}
	})
	nudge.Subscribe(c, func(ev nudge.CollisionHeld) {
		publish(Event{Type: "collision", Workspace: ev.Trigger.WorkspaceID, Detail: mustJSON(ev.Collision)})
	})
	nudge.Subscribe(c, func(s nudge.FallbackStep) {
		publish(Event{Type: "fallback", Workspace: s.Workspace, Detail: mustJSON(s)})
	})
	nudge.Subscribe(c, func(ev nudge.DialogShown) {
		publish(Event{Type: "dialog_shown", Workspace: ev.Workspace, Detail: mustJSON(map[string]any{"runtime_id": ev.RuntimeID, "dialog": ev.Dialog})})
	})
	nudge.Subscribe(c, func(ev nudge.DialogAnswerSent) {
		publish(Event{Type: "dialog_answered", Workspace: ev.Workspace, Detail: mustJSON(map[string]any{"runtime_id": ev.RuntimeID,
			"dialog_id": ev.DialogID, "title": ev.Title, "option": ev.Option, "by": ev.By, "reason": ev.Reason, "via": ev.Via})})
	})
	nudge.Subscribe(c, func(a observe.Alert) { // on the event stream, in its runtime's workspace
		ws := ""
		if a.RuntimeID != "" {
			ws = eventWorkspace(d.reg, a.RuntimeID)
		}
		publish(Event{Type: "alert", Workspace: ws, Detail: mustJSON(a)})
	})
	return c
}
