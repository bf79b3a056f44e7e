// Package agentrecord follows the session record each agent CLI keeps of its own turns
// (ack/record) for the runtimes whose profile names one, and reports what it shows to the
// daemon's rooms: a trigger's prompt is in the record (its ack, with file and line), the
// agent is mid-turn (an ack wait goes on instead of typing the prompt again), the turn
// that took a prompt ended (its reply), the agent's session id.
//
// A record is followed for a local runtime with a working directory, from the moment its
// program starts (spawn, restart, relaunch); a runtime on an ssh host, or adopted without
// a directory, rests on its screen as before. A record nudge cannot read (a CLI version
// that changed its format, a path leading out of the CLI's directory) is logged once as
// degraded, listed by Degraded (doctor, health), and acks rest on the screen and the
// marker again: the envelope asks for the marker whenever the record is not being read.
//
// Ownership: New starts nothing; Runtime starts and stops one reader goroutine per
// runtime (ack.Records); Close ends them all and waits.
package agentrecord

import (
	"context"
	"errors"
	"os"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/ack"
	"github.com/nudgehq/nudge/ack/record"
	"github.com/nudgehq/nudge/panes"
)

// Config is what a Watcher reads and whom it tells.
type Config struct {
	Profiles map[string]panes.Profile
	// Acks takes a prompt seen in a record as its trigger's ack.
	Acks interface {
		RecordAck(runtimeID, triggerID, evidence string) ack.RecordOwner
	}
	// Runtimes: the session id read from a record is written to its runtime.
	Runtimes interface {
		Get(id string) (nudge.Runtime, bool)
		Update(id string, fn func(*nudge.Runtime)) (nudge.Runtime, error)
	}
	// Reply takes the reply of the turn that took a trigger's prompt (nil: dropped).
	Reply  func(runtimeID, triggerID string, r ack.Reply)
	Getenv func(string) string // the daemon's environment (os.Getenv)
	Logger hclog.Logger
	// Open replaces record.Open (tests).
	Open func(f record.Format, s record.Spec) record.Reader
}

// envVars are the variables by which the CLIs move their own directories.
var envVars = []string{"CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME", "PI_CODING_AGENT_DIR", "PI_CODING_AGENT_SESSION_DIR", "XDG_DATA_HOME"}

// following is what a runtime's reader follows.
type following struct {
	f    record.Format
	spec record.Spec
}

// Watcher decides which runtimes' records are followed.
type Watcher struct {
	cfg Config
	rs  *ack.Records

	mu       sync.Mutex
	program  map[string]time.Time // runtime id → start of the program whose record is followed
	follows  map[string]following // runtime id → what its reader follows
	degraded map[string]string    // runtime id → why its record is not read
}

// New returns a Watcher following nothing yet.
func New(cfg Config) *Watcher {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.Getenv == nil {
		cfg.Getenv = os.Getenv
	}
	w := &Watcher{cfg: cfg, program: map[string]time.Time{}, follows: map[string]following{}, degraded: map[string]string{}}
	w.rs = ack.NewRecords(ack.RecordsConfig{
		OnPrompt:  w.onPrompt,
		OnForeign: w.onForeign,
		OnReply:   w.onReply,
		OnSession: w.onSession,
		OnFound:   w.onFound,
		OnEnd:     w.onEnd,
		Open:      cfg.Open,
	})
	return w
}

// Runtime takes a runtime's new state: a program that started (a spawn, a restart, a
// relaunch) has its record followed from then; a runtime gone has its reader stopped.
func (w *Watcher) Runtime(rt nudge.Runtime) {
	prof := w.cfg.Profiles[rt.Agent]
	if prof.Record == "" || rt.Host != "" || rt.Dir == "" || !panes.Live(rt.Status) {
		w.mu.Lock()
		_, had := w.program[rt.RuntimeID]
		delete(w.program, rt.RuntimeID)
		delete(w.follows, rt.RuntimeID)
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
	s := record.Spec{Spawned: start.Add(-time.Second), Dir: rt.Dir, Home: w.cfg.Getenv("HOME"), Env: map[string]string{}}
	if !start.After(rt.CreatedAt.Add(time.Second)) {
		// The runtime's first program (or one running before the daemon started): its
		// session id names its record (given at launch, or read before). A relaunch may
		// start another session: its record is the newest since.
		s.SessionID = rt.SessionID
	}
	for _, k := range envVars {
		if v := w.cfg.Getenv(k); v != "" {
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

// Working reports whether the runtime's record shows its agent mid-turn.
func (w *Watcher) Working(runtimeID string) bool { return w.rs.Working(runtimeID) }

// Live reports whether the runtime's record is being read.
func (w *Watcher) Live(runtimeID string) bool { return w.rs.Live(runtimeID) }

// Sync reads the runtime's record to its end now (ack.Records.Sync).
func (w *Watcher) Sync(ctx context.Context, runtimeID string) { w.rs.Sync(ctx, runtimeID) }

// Degraded lists the runtimes whose record could not be read, and why.
func (w *Watcher) Degraded() map[string]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]string, len(w.degraded))
	for k, v := range w.degraded {
		out[k] = v
	}
	return out
}

// Close ends every reader and waits for them. Safe on nil.
func (w *Watcher) Close() {
	if w != nil {
		w.rs.Close()
	}
}

func (w *Watcher) onPrompt(runtimeID, triggerID, evidence string) ack.RecordOwner {
	if w.cfg.Acks == nil {
		return ack.RecordUnknown
	}
	return w.cfg.Acks.RecordAck(runtimeID, triggerID, evidence)
}

// onForeign follows the runtime's record again, passing over path: it showed a prompt
// sent to another runtime (two agents in one directory, told apart by their prompts).
func (w *Watcher) onForeign(runtimeID, path string) {
	w.mu.Lock()
	f, s, ok := w.follows[runtimeID].f, w.follows[runtimeID].spec, w.follows[runtimeID].f != nil
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
		w.cfg.Logger.Info("the record found is another runtime's: looking again", "runtime_id", runtimeID, "path", path)
		w.rs.Follow(runtimeID, f, s)
	}
}

// maxExclude bounds the records a runtime passes over.
const maxExclude = 64

func (w *Watcher) onReply(runtimeID, triggerID string, r ack.Reply) {
	if w.cfg.Reply != nil {
		w.cfg.Reply(runtimeID, triggerID, r)
	}
}

func (w *Watcher) onSession(runtimeID, sessionID string) {
	rt, ok := w.cfg.Runtimes.Get(runtimeID)
	if !ok || rt.SessionID == sessionID || !w.cfg.Profiles[rt.Agent].ValidSessionID(sessionID) {
		return
	}
	if _, err := w.cfg.Runtimes.Update(runtimeID, func(r *nudge.Runtime) { r.SessionID = sessionID }); err == nil {
		w.cfg.Logger.Info("session id from the agent's record", "runtime_id", runtimeID, "session_id", sessionID)
	}
}

func (w *Watcher) onFound(runtimeID, path string) {
	w.cfg.Logger.Info("following the agent's record", "runtime_id", runtimeID, "path", path)
}

func (w *Watcher) onEnd(runtimeID string, err error) {
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
	w.cfg.Logger.Warn("agent record not read", "runtime_id", runtimeID, "why", why, "err", err)
}
