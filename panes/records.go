package panes

import (
	"sort"
	"sync"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/store"
)

// records is the registry of runtime records that every other part shares: the live
// nudge.Runtime of each runtime, written behind to the store in order (persist.go), with
// what the operations and the reconciler note about each (busy, stopped, held, a fallback
// resume run, a crash resume) and the pane index OnOutput resolves pane ids through. One
// lock, mu, guards all of it; the others read and change records only through it (Get,
// List, Transition, Update and the *Locked methods with mu held). Its marker scan and
// recovery clock have their own locks. It starts no goroutine; Close flushes the store.
type records struct {
	cfg *Config
	db  *store.DB

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

	panes    sync.Map      // pane key -> runtime id, for OnOutput
	markers  markerScan    // completion markers in pane output
	recovery recoveryClock // the pace and deadline of automatic restarts
}

func newRecords(cfg *Config, db *store.DB) *records {
	return &records{cfg: cfg, db: db, rts: map[string]*nudge.Runtime{}, busy: map[string]string{},
		stopped: map[string]bool{}, held: map[string]int{}, oneOff: map[string]string{},
		resumed: map[string]bool{}, noResume: map[string]bool{}}
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
		r.rts[rt.RuntimeID] = &rt
		r.indexPane(&rt)
		r.watchMarkerLocked(&rt)
		if b, err := r.db.GetMeta(stoppedKey(rt.RuntimeID)); err == nil && len(b) > 0 {
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

// Profile returns a profile by name.
func (r *records) Profile(name string) (Profile, bool) {
	p, ok := r.cfg.Profiles[name]
	return p, ok
}

func notFound(id string) error {
	return nudge.NewError(nudge.NotFound, "unknown runtime "+id+" (`nudge ls` lists them; ids are rt_WORKSPACE.ROLE)")
}

// Transition moves a runtime to another status: validated against the state machine,
// persisted, audited (runtime_status_changed with from, to and reason), then OnChange. A
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
// id, last trigger, ...) through fn, persists the result and calls OnChange. fn must not
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
func (r *records) shownReadyLocked(cur, next *nudge.Runtime) bool {
	status := cur.Status
	return (status == nudge.StatusStarting || status == nudge.StatusFallbackResume && r.oneOff[cur.RuntimeID] == cur.PaneID) &&
		r.busy[cur.RuntimeID] == "" &&
		next.Readiness == nudge.Ready && r.cfg.Profiles[cur.Agent].ReadyOn == ReadyOnReadiness
}
