package panes

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/nudgehq/nudge"
)

// records is the registry of runtime records that every other part shares: the live
// nudge.Runtime of each runtime, written behind to the store in order (persist.go), with
// what the operations and the reconciler note about each (busy, stopped, held, a fallback
// resume run, a crash resume) and the pane index pane output resolves pane ids through. One
// lock, mu, guards all of it; the others read and change records only through it (Get,
// List, Transition, Update and the *Locked methods with mu held). Its marker scan and
// recovery clock have their own locks. It starts no goroutine; Close flushes the store.
type records struct {
	cfg *Config
	db  Store

	mu      sync.Mutex
	rts     map[string]*nudge.Runtime // by runtime id; never deregistered ones
	busy    map[string]string         // runtime id -> spawning|restarting|stopping|restart-pending
	stopped map[string]bool           // stopped by Stop: never restarted automatically
	held    map[string]int            // HoldRestarts count: no automatic restart while > 0
	// oneOff: the pane id of a fallback resume run in the runtime's place (its end is
	// neither clean nor a crash: the runtime's own program comes back).
	oneOff map[string]string
	// resumed: the runtime's current program was started by its interactive resume after
	// a crash; if that crashes too, the next restart is fresh.
	resumed  map[string]bool
	noResume map[string]bool
	// paneSeq counts the panes records were given; paneAt is the count when each runtime
	// got its current pane. A reconcile lists the panes before it takes mu: a runtime given
	// its pane since (a spawn or a restart that just ended) is not judged by that list.
	paneSeq uint64
	paneAt  map[string]uint64

	panes    sync.Map      // pane key -> runtime id, for pane output
	markers  markerScan    // completion markers in pane output
	recovery recoveryClock // the pace and deadline of automatic restarts
}

func newRecords(cfg *Config, db Store) *records {
	return &records{cfg: cfg, db: db, rts: map[string]*nudge.Runtime{}, busy: map[string]string{},
		stopped: map[string]bool{}, held: map[string]int{}, oneOff: map[string]string{},
		resumed: map[string]bool{}, noResume: map[string]bool{}, paneAt: map[string]uint64{}}
}

// load takes the runtimes read from the store (all but the deregistered) and calls ws for
// each one's workspace, with mu held.
func (r *records) load(rts []nudge.Runtime, ws func(name string)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range rts {
		rt := rts[i]
		if rt.Status == nudge.StatusDeregistered {
			continue
		}
		if rt.Host == "" {
			rt.Host = r.cfg.SSHHost // a record from before hosts were per workspace
		}
		if rt.TmuxSession == "" {
			rt.TmuxSession = SessionName(rt.WorkspaceID)
		}
		r.rts[rt.RuntimeID] = &rt
		r.indexPane(&rt)
		r.watchMarkerLocked(&rt)
		if b, err := r.db.Meta().GetMeta(stoppedKey(rt.RuntimeID)); err == nil && len(b) > 0 {
			r.stopped[rt.RuntimeID] = true
		}
		ws(rt.WorkspaceID)
	}
}

// Get returns a runtime by id.
func (r *records) Get(id string) (nudge.Runtime, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rt, ok := r.rts[id]
	if !ok {
		return nudge.Runtime{}, false
	}
	return cloneRuntime(rt), true
}

// Lookup returns the runtime of a workspace's role.
func (r *records) Lookup(workspace, role string) (nudge.Runtime, bool) {
	if rt, ok := r.Get(RuntimeID(workspace, role)); ok {
		return rt, true
	}
	return r.byAgentID(workspace, role)
}

// byAgentID finds the runtime of workspace whose agent_id (seed 000 §10) is id, when it
// differs from its role; two such runtimes are ambiguous and find none.
func (r *records) byAgentID(workspace, id string) (nudge.Runtime, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var found *nudge.Runtime
	for _, rt := range r.rts {
		if rt.WorkspaceID == workspace && rt.AgentID == id && id != "" {
			if found != nil {
				return nudge.Runtime{}, false
			}
			found = rt
		}
	}
	if found == nil {
		return nudge.Runtime{}, false
	}
	return cloneRuntime(found), true
}

// List returns every runtime, ordered by workspace then role.
func (r *records) List() []nudge.Runtime {
	r.mu.Lock()
	out := make([]nudge.Runtime, 0, len(r.rts))
	for _, rt := range r.rts {
		out = append(out, cloneRuntime(rt))
	}
	r.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].WorkspaceID != out[j].WorkspaceID {
			return out[i].WorkspaceID < out[j].WorkspaceID
		}
		return out[i].Role < out[j].Role
	})
	return out
}

func notFound(id string) error {
	return nudge.NewError(nudge.NotFound, "unknown runtime "+id+" (`nudge ls` lists them; ids are rt_WORKSPACE.ROLE)")
}

// Transition moves a runtime to another status: validated against the state machine,
// persisted, audited (runtime_status_changed with from, to and reason), then published (nudge.RuntimeChanged). A
// transition to the current status is a no-op. An illegal one returns a CONFLICT
// *nudge.Error wrapping *TransitionError and changes nothing.
func (r *records) Transition(id string, to nudge.Status, reason string) (nudge.Runtime, error) {
	r.mu.Lock()
	rt, ok := r.rts[id]
	if !ok {
		r.mu.Unlock()
		return nudge.Runtime{}, notFound(id)
	}
	if rt.Status == pausedTarget(rt, to) {
		defer r.mu.Unlock()
		return cloneRuntime(rt), nil
	}
	ch, err := r.transitionLocked(id, to, reason, "", nil)
	r.mu.Unlock()
	if err != nil {
		return nudge.Runtime{}, err
	}
	r.notify(ch)
	return ch[0].rt, nil
}

// Update changes a runtime's other fields (readiness, operator_busy, heartbeat, session
// id, last trigger, ...) through fn, persists the result and publishes it (nudge.RuntimeChanged). fn must not
// change RuntimeID or Status (use Transition); such an Update is refused.
func (r *records) Update(id string, fn func(*nudge.Runtime)) (nudge.Runtime, error) {
	r.mu.Lock()
	cur, ok := r.rts[id]
	if !ok {
		r.mu.Unlock()
		return nudge.Runtime{}, notFound(id)
	}
	next := cloneRuntime(cur)
	fn(&next)
	if next.RuntimeID != cur.RuntimeID || next.Status != cur.Status {
		r.mu.Unlock()
		return nudge.Runtime{}, nudge.NewError(nudge.BadRequest, "update may not change runtime_id or status")
	}
	if !Live(next.Status) {
		next.Readiness = nudge.Unknown // no stale readiness on a dead pane
	}
	if r.shownReadyLocked(cur, &next) {
		delete(r.oneOff, id) // an interactive resume (claude --resume) is the runtime's program now
		chs, err := r.transitionLocked(id, nudge.StatusReady, "agent shows READY", "",
			func(n *nudge.Runtime) { status := n.Status; *n = cloneRuntime(&next); n.Status = status })
		r.mu.Unlock()
		if err != nil {
			return nudge.Runtime{}, err
		}
		r.notify(chs)
		return chs[len(chs)-1].rt, nil
	}
	next.UpdatedAt = r.cfg.Now()
	err := r.putLocked(&next)
	r.mu.Unlock()
	if err != nil {
		return nudge.Runtime{}, err
	}
	r.notify([]change{{rt: next, prev: cur.Status}})
	return next, nil
}

// shownReadyLocked: a starting runtime whose profile waits for readiness now reads READY
// (starting → ready, seed 001 §9 "codex_detected"), or a resume run in its pane does
// (fallback_resume → ready, "resume_ok": an interactive resume such as claude --resume). Not while a spawn or restart still
// holds it: that operation records the runtime first.
//
// A resumed session (its interactive resume, r.resumed) may read ERROR instead: it draws
// its history above the composer, and the last turn's error (often why a fallback resumed
// it) is then the line the detector reads. ERROR holds no trigger of a ready runtime.
func (r *records) shownReadyLocked(cur, next *nudge.Runtime) bool {
	status := cur.Status
	shown := next.Readiness == nudge.Ready || next.Readiness == nudge.ErrorState && r.resumed[cur.RuntimeID]
	return (status == nudge.StatusStarting || status == nudge.StatusFallbackResume && r.oneOff[cur.RuntimeID] == cur.PaneID) &&
		r.busy[cur.RuntimeID] == "" &&
		shown && r.cfg.Profiles[cur.Agent].ReadyOn == ReadyOnReadiness
}

// watchMarkerLocked arms the marker scan for rt's current pane. mu is held.
func (r *records) watchMarkerLocked(rt *nudge.Runtime) {
	if k := keyOf(rt); k.n >= 0 {
		r.markers.watch(k, r.cfg.Profiles[rt.Agent].DoneMarker)
	}
}

// SetPaused pauses or resumes triggers for a runtime (`nudge pause|resume`). The paused
// flag is the trigger gate; the status shows it: a ready runtime goes to paused at once,
// one in the middle of a trigger (or still starting) when it would next be ready, and
// resuming a paused runtime makes it ready again. Pausing twice is a no-op.
func (r *records) SetPaused(id string, paused bool, reason string) (nudge.Runtime, error) {
	r.mu.Lock()
	cur, ok := r.rts[id]
	if !ok {
		r.mu.Unlock()
		return nudge.Runtime{}, notFound(id)
	}
	status := cur.Status
	set := func(n *nudge.Runtime) { n.Paused = paused }
	var chs []change
	var err error
	switch {
	case paused && status == nudge.StatusReady:
		chs, err = r.transitionLocked(id, nudge.StatusPaused, reason, "", set)
	case !paused && status == nudge.StatusPaused:
		chs, err = r.transitionLocked(id, nudge.StatusReady, reason, "", set)
	case cur.Paused != paused:
		chs, err = r.updateLocked(id, set)
	}
	r.mu.Unlock()
	return r.settled(id, chs, err)
}

// settled ends a change made under mu (released): its notifications go out and the
// runtime is returned as it is now, or err.
func (r *records) settled(id string, chs []change, err error) (nudge.Runtime, error) {
	if err != nil {
		return nudge.Runtime{}, err
	}
	r.notify(chs)
	got, _ := r.Get(id)
	return got, nil
}

// updateLocked persists fn's change to a runtime without a status change. mu is held.
func (r *records) updateLocked(id string, fn func(*nudge.Runtime)) ([]change, error) {
	cur := r.rts[id]
	if cur == nil {
		return nil, notFound(id)
	}
	next := cloneRuntime(cur)
	fn(&next)
	next.UpdatedAt = r.cfg.Now()
	if err := r.putLocked(&next); err != nil {
		return nil, err
	}
	return []change{{rt: next, prev: cur.Status}}, nil
}

// toStatusLocked transitions to `to`, through offline first when the direct edge is not
// allowed (a manual restart of a runtime in the middle of a trigger).
func (r *records) toStatusLocked(id string, to nudge.Status, reason string, code nudge.Code, mutate func(*nudge.Runtime)) ([]change, error) {
	cur := nudge.Status(r.rts[id].Status)
	var chs []change
	if !CanTransition(cur, to) && CanTransition(cur, nudge.StatusOffline) {
		c, err := r.transitionLocked(id, nudge.StatusOffline, reason, code, nil)
		if err != nil {
			return nil, err
		}
		chs = c
	}
	c, err := r.transitionLocked(id, to, reason, code, mutate)
	return append(chs, c...), err
}

// EnterRecovery shows in the state machine that a fallback chain is recovering the runtime:
// stage is fallback_resume or spawn_recovery (seed 001 §9). RelaunchWith enters them by
// itself (its argv tells a resume from a spawn); a chain that recovers a runtime some other
// way (a launch in a window of its own) calls this, and Transition to leave them.
func (r *records) EnterRecovery(id string, stage nudge.Status, reason string) (nudge.Runtime, error) {
	if stage != nudge.StatusFallbackResume && stage != nudge.StatusSpawnRecovery {
		return nudge.Runtime{}, badRequest("recovery stage %q: want fallback_resume or spawn_recovery", stage)
	}
	r.mu.Lock()
	if _, ok := r.rts[id]; !ok {
		r.mu.Unlock()
		return nudge.Runtime{}, notFound(id)
	}
	var chs []change
	var err error
	if nudge.Status(r.rts[id].Status) != stage {
		chs, err = r.toStatusLocked(id, stage, reason, "", nil)
	}
	r.mu.Unlock()
	return r.settled(id, chs, err)
}

// reserve marks a role as being worked on; a live record or a concurrent operation on
// it is a CONFLICT.
func (r *records) reserve(id, what string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if op := r.busy[id]; op != "" {
		return nudge.NewError(nudge.Conflict, fmt.Sprintf("runtime %s is busy (%s)", id, op))
	}
	if rt := r.rts[id]; rt != nil && Live(rt.Status) {
		return nudge.NewError(nudge.Conflict, fmt.Sprintf("runtime %s already exists (%s, pane %s)", id, rt.Status, rt.PaneID))
	}
	r.busy[id] = what
	return nil
}

// paneMark is the pane count now: a list of panes taken after it shows every runtime
// whose paneAt is at most the mark.
func (r *records) paneMark() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.paneSeq
}

func (r *records) release(id string) {
	r.mu.Lock()
	delete(r.busy, id)
	r.mu.Unlock()
}

// record stores a new runtime record and audits it (the caller then wakes its workspace).
func (r *records) record(rt nudge.Runtime, event string, detail map[string]any) (nudge.Runtime, error) {
	return r.recordIf(rt, event, detail, nil)
}

// recordIf is record, done only if check (run with the lock held; nil: none) passes.
func (r *records) recordIf(rt nudge.Runtime, event string, detail map[string]any, check func() error) (nudge.Runtime, error) {
	r.mu.Lock()
	if check != nil {
		if err := check(); err != nil {
			r.mu.Unlock()
			return nudge.Runtime{}, err
		}
	}
	prev := nudge.Status("")
	if old := r.rts[rt.RuntimeID]; old != nil {
		prev = old.Status
	}
	if err := r.putLocked(&rt); err != nil {
		r.mu.Unlock()
		return nudge.Runtime{}, err
	}
	delete(r.stopped, rt.RuntimeID)
	r.clearStoppedLocked(rt.RuntimeID)
	r.auditLocked(&rt, event, "", "", detail)
	r.mu.Unlock()
	r.notify([]change{{rt: rt, prev: prev}})
	return rt, nil
}

func (r *records) clearStoppedLocked(id string) {
	if err := r.db.Meta().PutMeta(stoppedKey(id), nil); err != nil {
		r.logErr("clear stopped", id, err)
	}
}

// checkPaneFree refuses a pane of srv another live runtime already holds, on the same
// server whatever spelling its record keeps (sameServer).
func (r *records) checkPaneFree(srv server, paneID string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.checkPaneFreeLocked(srv, paneID)
}

// checkPaneFreeLocked is checkPaneFree with the lock held.
func (r *records) checkPaneFreeLocked(srv server, paneID string) error {
	for _, rt := range r.rts {
		if rt.PaneID == paneID && Live(rt.Status) && sameServer(r.cfg, serverOf(rt), srv) {
			return nudge.NewError(nudge.Conflict, "pane "+paneID+" is already runtime "+rt.RuntimeID+
				" (`nudge deregister "+rt.RuntimeID+"` first to adopt it under another name)")
		}
	}
	return nil
}

// holders are the live runtimes whose pane has id paneID, on any server.
func (r *records) holders(paneID string) []nudge.Runtime {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []nudge.Runtime
	for _, rt := range r.rts {
		if rt.PaneID == paneID && Live(rt.Status) {
			out = append(out, cloneRuntime(rt))
		}
	}
	return out
}

// findPane finds rt's pane in a listing of its workspace's panes (findPaneLocked).
func (r *records) findPane(rt *nudge.Runtime, panes []paneInfo) (paneInfo, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.findPaneLocked(rt, indexPanes(panes), panes)
}

// findPaneLocked finds the runtime's pane by id (same session, and same pid or window
// name, so a reused id on a new tmux server is not taken for ours), else by target.
func (r *records) findPaneLocked(rt *nudge.Runtime, byID map[string]paneInfo, panes []paneInfo) (paneInfo, bool) {
	if p, ok := byID[rt.PaneID]; ok && p.Session == rt.TmuxSession && (p.PID == rt.PID || p.Window == rt.TmuxWindow) {
		return p, true
	}
	for _, p := range panes {
		if p.Session != rt.TmuxSession || p.Window != rt.TmuxWindow || p.Index != rt.TmuxPane {
			continue
		}
		if owner, ok := r.panes.Load(paneKey{serverOf(rt), paneNum(p.ID)}); ok && owner != rt.RuntimeID {
			continue
		}
		return p, true
	}
	return paneInfo{}, false
}

// Stopped reports whether runtime id was stopped (`nudge stop`) and not started again
// since (a restart or a new spawn clears it): it stays down, and no trigger relaunches it.
func (r *records) Stopped(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stopped[id]
}

// restartableLocked: an offline managed runtime that was not stopped and whose restarts
// are not held by a fallback chain.
func (r *records) restartableLocked(rt *nudge.Runtime) bool {
	return rt.Managed && !r.stopped[rt.RuntimeID] && r.held[rt.RuntimeID] == 0 &&
		rt.Status == nudge.StatusOffline
}

func (r *records) logErr(op, id string, err error) {
	if err != nil {
		r.cfg.Logger.Error(op, "runtime", id, "error", err)
	}
}

// HoldRestarts stops automatic restarts of a runtime (and keeps deaths out of its crash
// count) until the returned release is called: the fallback chain owns the pane meanwhile.
func (r *records) HoldRestarts(id string) (release func()) {
	r.mu.Lock()
	r.held[id]++
	r.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			r.mu.Lock()
			if r.held[id]--; r.held[id] <= 0 {
				delete(r.held, id)
			}
			r.mu.Unlock()
		})
	}
}

// deregister is Registry.Deregister; drop forgets the runtime's kept screen.
func (r *records) deregister(ctx context.Context, id, reason string, drop func(id string)) error {
	defer r.db.Flush() // durable when it returns
	r.mu.Lock()
	if op := r.busy[id]; op != "" && op != "restart-pending" {
		r.mu.Unlock()
		return nudge.NewError(nudge.Conflict, "runtime "+id+" is busy ("+op+"): retry when that is done")
	}
	chs, err := r.transitionLocked(id, nudge.StatusDeregistered, "deregistered: "+reason, "", nil)
	if err == nil {
		rt := r.rts[id]
		r.auditLocked(rt, "runtime_deregistered", reason, "", nil)
		r.panes.Delete(keyOf(rt))
		drop(id)
		r.recovery.forget(id)
		delete(r.rts, id)
		delete(r.busy, id)
		delete(r.stopped, id)
		delete(r.paneAt, id)
	}
	r.mu.Unlock()
	r.notify(chs)
	return err
}

func (r *records) beginStop(id, reason string) (nudge.Runtime, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rt, ok := r.rts[id]
	if !ok {
		return nudge.Runtime{}, notFound(id)
	}
	if op := r.busy[id]; op != "" && op != "restart-pending" {
		return nudge.Runtime{}, nudge.NewError(nudge.Conflict, "runtime "+id+" is busy ("+op+"): retry when that is done")
	}
	r.busy[id] = "stopping"
	r.stopped[id] = true
	r.recovery.forget(id)
	if err := r.db.Meta().PutMeta(stoppedKey(id), []byte(reason+" ")); err != nil {
		delete(r.busy, id)
		return nudge.Runtime{}, err
	}
	return cloneRuntime(rt), nil
}

// stopFailed records a stop that could not end the program: failed with STOP_FAILED.
func (r *records) stopFailed(rt *nudge.Runtime, reason string, e Ended) error {
	msg := "stop failed: the program " + e.How
	r.mu.Lock()
	var chs []change
	if cur := r.rts[rt.RuntimeID]; cur != nil && cur.Status != nudge.StatusFailed {
		var err error
		chs, err = r.toStatusLocked(rt.RuntimeID, nudge.StatusFailed, msg, nudge.StopFailed, nil)
		r.logErr("stop failed", rt.RuntimeID, err)
	}
	r.auditLocked(rt, "runtime_stop_failed", reason, nudge.StopFailed, e)
	r.mu.Unlock()
	r.notify(chs)
	return nudge.NewError(nudge.StopFailed, "stop "+rt.RuntimeID+": the program "+e.How)
}

// stopDone records a stop whose program ended: offline with its exit status (if it was
// still live), and the runtime_stopped audit record saying how it ended.
func (r *records) stopDone(rt *nudge.Runtime, reason string, exit *int, forced bool, e Ended) error {
	id := rt.RuntimeID
	var err error
	r.mu.Lock()
	var chs []change
	if Live(nudge.Status(r.rts[id].Status)) {
		chs, err = r.transitionLocked(id, nudge.StatusOffline, "stopped: "+reason+" ("+e.How+")", "",
			func(n *nudge.Runtime) { n.ExitStatus = exit })
	}
	if err == nil {
		r.auditLocked(rt, "runtime_stopped", reason, "", map[string]any{"killed": forced, "exit_status": exit,
			"ended_by": e.By, "ended_after": e.After, "pids": e.PIDs, "how": e.How})
	}
	r.mu.Unlock()
	r.notify(chs)
	return err
}
