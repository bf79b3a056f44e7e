package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/ack"
	eventstream "github.com/nudgehq/nudge/cmd/nudge/events"
	"github.com/nudgehq/nudge/controlmode"
	"github.com/nudgehq/nudge/detector"
	"github.com/nudgehq/nudge/inject"
	"github.com/nudgehq/nudge/panes"
)

// hooks carries what one room reports to the rooms that react to it: the arrows of the
// root package's map that run against the import order. The registry's connection read
// goroutines report pane output and events; the monitor reports readiness; the registry,
// the pipeline and the fallback chain report changes. hooks passes each on to the
// pipeline, the ack tracker, the monitor, the event hub and the observer. It acts only
// once ready is set, when every room is open; none of its methods blocks.
type hooks struct {
	d            *daemon // the rooms, set as openDaemon opens them
	orchestrator string  // WS/ROLE that gets a sync trigger after a human intervened
	socket       string
	log          hclog.Logger
	ready        atomic.Bool
}

// ackSignals is the ack signals of a runtime's profile (the ack tracker asks).
func (h *hooks) ackSignals(runtimeID string) []string {
	rt, ok := h.d.reg.Get(runtimeID)
	if !ok {
		return nil
	}
	return h.d.profiles[rt.Agent].AckSignals
}

// recordWorking and recordLive tell the ack tracker what the agent's own record shows.
func (h *hooks) recordWorking(id string) bool { return h.ready.Load() && h.d.rec.Working(id) }
func (h *hooks) recordLive(id string) bool    { return h.ready.Load() && h.d.rec.Live(id) }

// recordSync reads the agent's own record to its end before a prompt is typed again.
func (h *hooks) recordSync(ctx context.Context, id string) {
	if h.ready.Load() {
		h.d.rec.Sync(ctx, id)
	}
}

// runtimeEnv is the environment a spawned runtime gets: where the daemon is, and a token
// for itself only.
func (h *hooks) runtimeEnv(rt nudge.Runtime) []string {
	env := []string{"NUDGE_SOCKET=" + h.socket, "NUDGE_RUNTIME_ID=" + rt.RuntimeID}
	tok, err := h.d.auth.MintRuntime(rt.RuntimeID, rt.WorkspaceID)
	if err != nil {
		h.log.Error("mint runtime token", "runtime_id", rt.RuntimeID, "err", err)
		return env
	}
	return append(env, "NUDGE_RUNTIME_TOKEN="+tok)
}

// onOutput fans a managed pane's output out to the pipeline (echo and submit detection),
// the ack tracker and the monitor. It runs on a control connection's read goroutine.
func (h *hooks) onOutput(runtimeID string, data []byte) {
	if !h.ready.Load() {
		return
	}
	h.d.pipe.Observe(runtimeID)
	h.d.acks.Feed(runtimeID, data)
	h.d.mon.Feed(runtimeID, data)
}

func (h *hooks) onEvent(workspace string, ev controlmode.Event) {
	if h.ready.Load() {
		h.d.mon.Event(workspace, ev)
	}
}

// onLLM counts a question to the LLM classifier in the metrics. It runs on the question's
// goroutine; one that ends before the daemon is ready is not counted.
func (h *hooks) onLLM(c detector.LLMCall) {
	if h.ready.Load() {
		h.d.obs.ObserveLLM(c)
	}
}

// onSnapshot tells the status files of a capture the monitor took (its hash, and how long
// the screen has been stable). It runs on the pane's goroutine.
func (h *hooks) onSnapshot(runtimeID string, s detector.Snapshot) {
	if h.ready.Load() && h.d.status != nil {
		h.d.status.Snapshot(runtimeID, s)
	}
}

func (h *hooks) onReadiness(runtimeID string, c detector.Classification, busy bool) {
	ws := eventWorkspace(h.d.reg, runtimeID)
	d := eventstream.Readiness{RuntimeID: runtimeID, Readiness: c.State, Summary: c.Summary,
		ActionsNeeded: c.ActionsNeeded, OperatorBusy: busy}
	h.d.hub.Publish(Event{Type: "readiness", Workspace: ws, Detail: mustJSON(d), Value: d})
	if !h.ready.Load() {
		return
	}
	h.d.obs.Workspace(ws)
	h.d.dlg.Shown(runtimeID, c.Dialog)
	if !busy && c.State == nudge.Ready {
		h.d.pipe.Kick(runtimeID)
	}
}

// onReply records the reply of the turn that took a trigger (read from the agent's
// record) on its receipt, and puts it on the trigger's own workspace's event stream. Only
// a trigger handed to that runtime takes it (inject.Pipeline.Reply): a record naming
// another trigger changes nothing and tells no one.
func (h *hooks) onReply(runtimeID, triggerID string, r ack.Reply) {
	if ok, err := h.d.pipe.Reply(runtimeID, triggerID, inject.Reply{Text: r.Text, Truncated: r.Truncated, EndedAt: r.EndedAt, Evidence: r.Evidence}); !ok || err != nil {
		return // known already, not this runtime's, or not a trigger of this daemon's (typed by hand, an old record)
	}
	t, err := h.d.pipe.Get(triggerID)
	if err != nil {
		return
	}
	h.d.hub.Publish(Event{Type: "reply", Workspace: t.WorkspaceID, Detail: mustJSON(map[string]any{
		"trigger_id": triggerID, "runtime_id": runtimeID, "turn_ended_at": r.EndedAt, "truncated": r.Truncated, "evidence": r.Evidence})})
}

// onFirstPrompt delivers a spawn's first prompt as a trigger to the runtime just
// spawned: typed (or handed over by its channel) once it is ready, acked like any other,
// and never on its command line, where every local uid could read it. The receipt's id
// is first_<unix ms>_<8 random hex>_<runtime id> (cut to nudge.MaxIDLen): trigger ids are
// one namespace for every workspace, so a caller of another workspace must not be able to
// take the id first and make this trigger fail.
func (h *hooks) onFirstPrompt(rt nudge.Runtime, prompt string) {
	id := fmt.Sprintf("first_%d_%s_%s", time.Now().UnixMilli(), randomHex(4), rt.RuntimeID)
	id = id[:min(len(id), nudge.MaxIDLen)]
	if !h.ready.Load() {
		h.log.Warn("first prompt dropped: the daemon is not ready", "runtime_id", rt.RuntimeID, "trigger_id", id)
		return
	}
	h.d.pipe.SubmitAsync(inject.Request{
		TriggerID: id, Workspace: rt.WorkspaceID, Agent: rt.AgentID, Prompt: prompt,
		Reason: "first_prompt", Caller: "nudge",
	}, func(_ inject.Submitted, err error) {
		if err != nil {
			h.log.Warn("first prompt trigger", "runtime_id", rt.RuntimeID, "trigger_id", id, "err", err)
		}
	})
}

// onHumanDone sends the orchestrator a synchronisation trigger after a human intervened
// in a worker's pane (seed 000 §13.2, seed 001 §4.1), and holds the worker's triggers
// until the orchestrator took it. The orchestrator is --orchestrator's WS/ROLE, or the
// role it names in the worker's workspace; by default the runtime whose role is
// "orchestrator" in the worker's workspace, if there is one ("none": no sync). The
// pipeline owns the submitting goroutine.
func (h *hooks) onHumanDone(rt nudge.Runtime) {
	ws, role, ok := h.orchestratorFor(rt)
	if !ok || !h.ready.Load() || (rt.WorkspaceID == ws && (rt.Role == role || strings.HasPrefix(rt.Role, role+panes.AsideMarker))) {
		return
	}
	id := fmt.Sprintf("sync_%d_%s_%s", time.Now().UnixMilli(), randomHex(4), strings.ReplaceAll(rt.RuntimeID, ".", "_"))
	id = id[:min(len(id), nudge.MaxIDLen)]
	h.d.pipe.HoldForSync(rt.RuntimeID, id) // before the sync exists: no worker trigger slips through
	h.d.pipe.SubmitAsync(inject.Request{
		TriggerID: id, Workspace: ws, Agent: role, ThreadID: "sync_" + rt.WorkspaceID,
		Prompt: fmt.Sprintf("A human intervened directly in %s (%s, pane %s). Review its pane before continuing autonomous work.",
			rt.Role, rt.WorkspaceID, rt.PaneID),
		Reason: "human_intervention", Caller: "nudge",
	}, func(_ inject.Submitted, err error) {
		if err != nil {
			h.d.pipe.ReleaseSync(rt.RuntimeID, id)
			h.log.Warn("sync trigger", "runtime_id", rt.RuntimeID, "err", err)
		}
	})
}

// defaultOrchestratorRole is the role of the runtime that gets sync triggers when
// --orchestrator names none.
const defaultOrchestratorRole = "orchestrator"

// orchestratorFor is the workspace and role of the orchestrator that gets the sync
// trigger for worker rt: --orchestrator WS/ROLE, else ROLE (or "orchestrator") in rt's
// workspace when a managed, live runtime has it. ok is false when there is none.
func (h *hooks) orchestratorFor(rt nudge.Runtime) (ws, role string, ok bool) {
	switch o := h.orchestrator; {
	case o == "none":
		return "", "", false
	case strings.Contains(o, "/"):
		ws, role, _ = strings.Cut(o, "/")
		return ws, role, true
	case o != "":
		ws, role = rt.WorkspaceID, o
	default:
		ws, role = rt.WorkspaceID, defaultOrchestratorRole
	}
	orch, found := h.d.reg.Lookup(ws, role)
	return ws, role, found && orch.Managed && panes.Live(orch.Status)
}

func (h *hooks) onRuntimeChange(rt nudge.Runtime, prev nudge.Status) {
	h.d.hub.Publish(Event{Type: "runtime", Workspace: rt.WorkspaceID, Runtime: rt})
	if !h.ready.Load() {
		return
	}
	h.d.obs.Workspace(rt.WorkspaceID)
	h.d.rec.Runtime(rt)
	if prev == "" || rt.Status == nudge.StatusStarting {
		h.d.mon.Refresh() // a new runtime, or a relaunch in a new pane: watch it now
	}
	if s := rt.Status; s != prev && (s == nudge.StatusStarting || s == nudge.StatusFallbackResume) {
		h.d.mon.Reclassify(rt.RuntimeID) // a new program: its screen is read afresh, even if it reads as the old one's did
	}
	if rt.Status == nudge.StatusReady {
		h.d.pipe.Kick(rt.RuntimeID)
	}
}

func (h *hooks) onTriggerChange(t nudge.Trigger) {
	h.d.hub.Publish(Event{Type: "trigger", Workspace: t.WorkspaceID, Trigger: t})
	if h.ready.Load() {
		h.d.obs.Trigger(t)
	}
}

// onCollision puts a trigger's collision event (held for a person past the max defer
// window: seed 000 §12) on its workspace's event stream.
func (h *hooks) onCollision(t nudge.Trigger, c inject.Collision) {
	h.d.hub.Publish(Event{Type: "collision", Workspace: t.WorkspaceID, Detail: mustJSON(c)})
}

func (h *hooks) onFallbackStep(step ack.Step) {
	ws := eventWorkspace(h.d.reg, step.RuntimeID)
	if t, err := h.d.db.Triggers().GetTrigger(step.TriggerID); err == nil { // not d.pipe: it may be opening
		ws = t.WorkspaceID
	}
	h.d.hub.Publish(Event{Type: "fallback", Workspace: ws, Detail: mustJSON(step)})
}

// randomHex returns n random bytes in hex: the unguessable part of an id the daemon makes.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b)
}
