package ack

import (
	"errors"
	"sync"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/ack/record"
	"github.com/nudgehq/nudge/panes"
)

// watcher decides which runtimes' session records the Tracker follows (its Records), and
// takes what they show: a prompt seen is an ack (Tracker.RecordAck), a reply is published
// (nudge.ReplyRead), a session id is written to its runtime.
//
// A record is followed for a local runtime with a working directory, from the moment its
// program starts (spawn, restart, relaunch: nudge.RuntimeChanged); a runtime on an ssh
// host, or adopted without a directory, rests on its screen as before. A record nudge
// cannot read (a CLI version that changed its format, a path leading out of the CLI's
// directory) is logged once as degraded, listed by Tracker.Degraded (doctor, health),
// and acks rest on the screen and the marker again: the envelope asks for the marker
// whenever the record is not being read.
type watcher struct {
	k  *Tracker
	rs *Records

	mu        sync.Mutex
	program   map[string]time.Time   // runtime id → start of the program whose record is followed
	follows   map[string]following   // runtime id → what its reader follows
	degraded  map[string]string      // runtime id → why its record is not read
	refollows map[string][]time.Time // runtime id → its looks again in the last minute (refollowAllowed)
}

var _ RecordSink = (*watcher)(nil)

// envVars are the variables by which the CLIs move their own directories.
var envVars = []string{"CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME", "PI_CODING_AGENT_DIR", "PI_CODING_AGENT_SESSION_DIR", "XDG_DATA_HOME"}

// following is what a runtime's reader follows.
type following struct {
	f    record.Format
	spec record.Spec
}

// relaunch) has its record followed from then; a runtime gone has its reader stopped.
func (w *watcher) follow(rt nudge.Runtime) {
	prof := w.k.cfg.Profiles[rt.Agent]
	if prof.Record == "" || rt.Host != "" || rt.Dir == "" || !panes.Live(rt.Status) {
		w.mu.Lock()
		_, had := w.program[rt.RuntimeID]
		delete(w.program, rt.RuntimeID)
		delete(w.follows, rt.RuntimeID)
		delete(w.refollows, rt.RuntimeID)
		w.mu.Unlock()
		if had {
			w.rs.Stop(rt.RuntimeID)
		}
		return
	}
	f, err := record.Lookup(prof.Record)
	if err != nil {
		return // the profile was checked at load; nothing to follow
	}
	// The program's start: the time its runtime last entered starting (a spawn or a
	// relaunch), else (a daemon started beside a running agent) its creation.
	start := rt.CreatedAt
	if rt.Status == nudge.StatusStarting || rt.Status == nudge.StatusFallbackResume {
		start = rt.StatusSince
	}
	w.mu.Lock()
	cur, had := w.program[rt.RuntimeID]
	if had && !start.After(cur) {
		w.mu.Unlock()
		return // the same program: its record is followed already
	}
	w.program[rt.RuntimeID] = start
	delete(w.degraded, rt.RuntimeID)
	w.mu.Unlock()
	s := record.Spec{Spawned: start.Add(-time.Second), Dir: rt.Dir, Home: w.k.cfg.Getenv("HOME"), Env: map[string]string{}}
	if !start.After(rt.CreatedAt.Add(time.Second)) {
		// The runtime's first program (or one running before the daemon started): its
		// session id names its record (given at launch, or read before). A relaunch may
		// start another session: its record is the newest since.
		s.SessionID = rt.SessionID
	}
	for _, k := range envVars {
		if v := w.k.cfg.Getenv(k); v != "" {
			s.Env[k] = v
		}
	}
	for _, kv := range prof.Env { // the profile's own settings win, as in the pane
		for _, k := range envVars {
			if len(kv) > len(k) && kv[:len(k)+1] == k+"=" {
				s.Env[k] = kv[len(k)+1:]
			}
		}
		if len(kv) > 5 && kv[:5] == "HOME=" {
			s.Home = kv[5:]
		}
	}
	w.mu.Lock()
	w.follows[rt.RuntimeID] = following{f: f, spec: s}
	w.mu.Unlock()
	w.rs.Follow(rt.RuntimeID, f, s)
}

// Prompt: a prompt in the record acks its trigger (Tracker.RecordAck).
func (w *watcher) Prompt(runtimeID, triggerID, evidence string) RecordOwner {
	return w.k.RecordAck(runtimeID, triggerID, evidence)
}

// Reply publishes the reply of the turn that took a trigger's prompt: the pipeline
// records it on that trigger's receipt if it was handed to this runtime.
func (w *watcher) Reply(r nudge.ReplyRead) { nudge.Publish(w.k.cfg.Bus, r) }

// degradedCopy lists the runtimes whose record could not be read, and why.
func (w *watcher) degradedCopy() map[string]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]string, len(w.degraded))
	for k, v := range w.degraded {
		out[k] = v
	}
	return out
}

// Foreign follows the runtime's record again, passing over path: it showed a prompt
// sent to another runtime (two agents in one directory, told apart by their prompts).
func (w *watcher) Foreign(runtimeID, path string) {
	w.mu.Lock()
	f, s, ok := w.follows[runtimeID].f, w.follows[runtimeID].spec, w.follows[runtimeID].f != nil
	if ok && !w.refollowAllowed(runtimeID) {
		w.mu.Unlock()
		w.k.cfg.Logger.Warn("the record keeps showing another runtime's prompts: not looked for again for a minute", "runtime_id", runtimeID, "path", path)
		return
	}
	if ok {
		if s.Exclude == nil || len(s.Exclude) >= maxExclude {
			s.Exclude = map[string]bool{}
		}
		ex := make(map[string]bool, len(s.Exclude)+1)
		for k := range s.Exclude {
			ex[k] = true
		}
		ex[path] = true
		s.Exclude = ex
		w.follows[runtimeID] = following{f: f, spec: s}
	}
	w.mu.Unlock()
	if ok {
		w.k.cfg.Logger.Info("the record found is another runtime's: looking again", "runtime_id", runtimeID, "path", path)
		w.rs.Follow(runtimeID, f, s)
	}
}

// refollowAllowed counts a runtime's looks for its record again and reports whether one
// more is allowed: at most maxRefollows a minute (an agent that keeps writing another
// runtime's envelopes into what it writes would have its record read anew without end).
// w.mu is held.
func (w *watcher) refollowAllowed(runtimeID string) bool {
	now := time.Now()
	if w.refollows == nil {
		w.refollows = map[string][]time.Time{}
	}
	recent := w.refollows[runtimeID][:0]
	for _, t := range w.refollows[runtimeID] {
		if now.Sub(t) < time.Minute {
			recent = append(recent, t)
		}
	}
	if len(recent) >= maxRefollows {
		w.refollows[runtimeID] = recent
		return false
	}
	w.refollows[runtimeID] = append(recent, now)
	return true
}

// maxRefollows bounds the looks again for one runtime's record in a minute.
const maxRefollows = 10

// maxExclude bounds the records a runtime passes over.
const maxExclude = 64

// Session takes the session id a runtime's record names, unless another live runtime
// holds it, or any runtime of another workspace ever did (ended or not, until it is
// deregistered): a record that names another runtime's session (an agent that wrote one)
// would have prompts, answers to approvals and a resume go to that session.
func (w *watcher) Session(runtimeID, sessionID string) {
	rt, ok := w.k.cfg.Runtimes.Get(runtimeID)
	if !ok || rt.SessionID == sessionID || !w.k.cfg.Profiles[rt.Agent].ValidSessionID(sessionID) {
		return
	}
	for _, o := range w.k.cfg.Runtimes.List() {
		if o.RuntimeID != runtimeID && o.SessionID == sessionID && (panes.Live(o.Status) ||
			o.WorkspaceID != rt.WorkspaceID && o.Status != nudge.StatusDeregistered) {
			w.k.cfg.Logger.Warn("a record names the session of another runtime: not taken", "runtime_id", runtimeID, "session_id", sessionID, "holder", o.RuntimeID)
			return
		}
	}
	if _, err := w.k.cfg.Runtimes.Update(runtimeID, func(r *nudge.Runtime) { r.SessionID = sessionID }); err == nil {
		w.k.cfg.Logger.Info("session id from the agent's record", "runtime_id", runtimeID, "session_id", sessionID)
	}
}

func (w *watcher) Found(runtimeID, path string) {
	w.k.cfg.Logger.Info("following the agent's record", "runtime_id", runtimeID, "path", path)
}

func (w *watcher) End(runtimeID string, err error) {
	why := err.Error()
	switch {
	case errors.Is(err, record.ErrUnknownFormat):
		why = "the record is in a format this nudge does not know (a newer CLI?): acks rest on the screen and the ack marker"
	case errors.Is(err, record.ErrOutside):
		why = "the record's path leads out of the CLI's own directory: not read"
	case errors.Is(err, record.ErrReplaced):
		why = "the record file was replaced by another (not the CLI's doing): no longer read; acks rest on the screen and the ack marker"
	case errors.Is(err, record.ErrNotRegular):
		why = "the record is not a regular file (a symlink, a FIFO, a device put in its place): not read"
	}
	w.mu.Lock()
	w.degraded[runtimeID] = why
	w.mu.Unlock()
	w.k.cfg.Logger.Warn("agent record not read", "runtime_id", runtimeID, "why", why, "err", err)
}
