package inject

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/panes"
)

// news is what the pipeline reads on the Bus from Open to Close: pane output (a direct
// call), and two clients, each its own goroutine. lanes takes what lets a held trigger go
// and the human's intervention, in the order they were published: the orchestrator's
// sync is held (HumanDone) before the pane's quiet (OperatorQuiet) kicks its lane.
// receipts takes the replies read in the agents' records and the spawns' first prompts,
// whose store writes never delay a kick.
type news struct {
	out      func()
	lanes    *nudge.Client
	receipts *nudge.Client
}

// subscribe starts reading the Bus (Open).
func (p *Pipeline) subscribe() {
	b := p.deps.Bus
	p.news.out = b.ReadOutput(p)
	p.news.lanes = nudge.NewClient(b, "inject.lanes", 256)
	nudge.Subscribe(p.news.lanes, func(ev nudge.ReadinessChanged) {
		if !ev.OperatorBusy && ev.Readiness == nudge.Ready {
			p.Kick(ev.RuntimeID)
		}
	})
	nudge.Subscribe(p.news.lanes, func(ev nudge.RuntimeChanged) {
		if ev.Runtime.Status == nudge.StatusReady {
			p.Kick(ev.Runtime.RuntimeID)
		}
	})
	nudge.Subscribe(p.news.lanes, p.humanDone)
	nudge.Subscribe(p.news.lanes, func(ev nudge.OperatorQuiet) { p.Kick(ev.RuntimeID) }) // deferred triggers are checked at once
	p.news.receipts = nudge.NewClient(b, "inject.receipts", 256)
	nudge.Subscribe(p.news.receipts, func(r nudge.ReplyRead) {
		if _, err := p.Reply(r); err != nil {
			p.log.Warn("record reply", "trigger_id", r.TriggerID, "runtime_id", r.RuntimeID, "err", err)
		}
	})
	nudge.Subscribe(p.news.receipts, p.firstPrompt)
}

// unsubscribe stops reading the Bus; the events already queued are handled (Close).
func (p *Pipeline) unsubscribe() {
	if p.news.out == nil {
		return // never opened
	}
	p.news.out()
	p.news.lanes.Close()
	p.news.receipts.Close()
}

// firstPrompt delivers a spawn's first prompt as a trigger to the runtime just spawned:
// typed (or handed over by its channel) once it is ready, acked like any other, and
// never on its command line, where every local uid could read it. The receipt's id is
// first_<unix ms>_<8 random hex>_<runtime id> (cut to nudge.MaxIDLen): trigger ids are
// one namespace for every workspace, so a caller of another workspace must not be able
// to take the id first and make this trigger fail.
func (p *Pipeline) firstPrompt(ev nudge.FirstPrompt) {
	rt := ev.Runtime
	id := fmt.Sprintf("first_%d_%s_%s", time.Now().UnixMilli(), randomHex(4), rt.RuntimeID)
	id = id[:min(len(id), nudge.MaxIDLen)]
	ok := p.SubmitAsync(Request{
		TriggerID: id, Workspace: rt.WorkspaceID, Agent: rt.AgentID, Prompt: ev.Prompt,
		Reason: "first_prompt", Caller: "nudge",
	}, func(_ Submitted, err error) {
		if err != nil {
			p.log.Warn("first prompt trigger", "runtime_id", rt.RuntimeID, "trigger_id", id, "err", err)
		}
	})
	if !ok {
		p.log.Warn("first prompt dropped: the pipeline is closing", "runtime_id", rt.RuntimeID, "trigger_id", id)
	}
}

// humanDone sends the orchestrator a synchronisation trigger after a human intervened
// in a worker's pane (seed 000 §13.2, seed 001 §4.1), and holds the worker's triggers
// until the orchestrator took it. The orchestrator is Config.Orchestrator's WS/ROLE, or
// the role it names in the worker's workspace; by default the runtime whose role is
// "orchestrator" in the worker's workspace, if there is one ("none": no sync).
//
// The Gates hold the worker's pane until this is done (HumanSync).
func (p *Pipeline) humanDone(ev nudge.HumanDone) {
	rt := ev.Runtime
	if hs, ok := p.deps.Gates.(HumanSync); ok {
		defer hs.HumanTaken(rt.RuntimeID)
	}
	ws, role, ok := p.orchestratorFor(rt)
	if !ok || (rt.WorkspaceID == ws && (rt.Role == role || strings.HasPrefix(rt.Role, role+panes.AsideMarker))) {
		return
	}
	id := fmt.Sprintf("sync_%d_%s_%s", time.Now().UnixMilli(), randomHex(4), strings.ReplaceAll(rt.RuntimeID, ".", "_"))
	id = id[:min(len(id), nudge.MaxIDLen)]
	p.HoldForSync(rt.RuntimeID, id) // before the sync exists: no worker trigger slips through
	p.SubmitAsync(Request{
		TriggerID: id, Workspace: ws, Agent: role, ThreadID: "sync_" + rt.WorkspaceID,
		Prompt: fmt.Sprintf("A human intervened directly in %s (%s, pane %s). Review its pane before continuing autonomous work.",
			rt.Role, rt.WorkspaceID, rt.PaneID),
		Reason: "human_intervention", Caller: "nudge",
	}, func(_ Submitted, err error) {
		if err != nil {
			p.ReleaseSync(rt.RuntimeID, id)
			p.log.Warn("sync trigger", "runtime_id", rt.RuntimeID, "err", err)
		}
	})
}

// HumanSync is implemented by Gates that hold a pane a human has just left until the
// pipeline took up the intervention (*detector.Monitor does): no worker trigger slips
// through before the orchestrator's sync holds it.
type HumanSync interface {
	// HumanTaken says the intervention in runtimeID's pane (nudge.HumanDone) is taken up.
	HumanTaken(runtimeID string)
}

// defaultOrchestratorRole is the role of the runtime that gets sync triggers when
// Config.Orchestrator names none.
const defaultOrchestratorRole = "orchestrator"

// orchestratorFor is the workspace and role of the orchestrator that gets the sync
// trigger for worker rt: Config.Orchestrator's WS/ROLE, else ROLE (or "orchestrator")
// in rt's workspace when a managed, live runtime has it. ok is false when there is none.
func (p *Pipeline) orchestratorFor(rt nudge.Runtime) (ws, role string, ok bool) {
	switch o := p.cfg.Orchestrator; {
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
	orch, found := p.deps.Runtimes.Lookup(ws, role)
	return ws, role, found && orch.Managed && panes.Live(orch.Status)
}

// randomHex returns n random bytes in hex: the unguessable part of an id nudge makes.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b)
}
