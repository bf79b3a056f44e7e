// Package wake prompts agents nobody prompted (seed 000 §8.4's wake policy, seed 004's
// health prompts): an agent quiet for a while, one whose read cursor lags a thread's
// head, one whose heartbeats stopped. Each prompt is a trigger through the daemon's
// normal pipeline (gates, envelope, receipt, audit) whose reason names the policy, within
// seed 004's limits: at most one wake prompt per workspace per Gap, none to an agent
// that is busy (working, confirming, a human at its pane, triggers queued), and every
// policy due for an agent batched into one prompt.
//
// The main types:
//
//	Waker   evaluates the policies every Config.Every; New starts it, Close stops it
//	Config  the policies' thresholds, the gap, the prompts, the Clock
//	Clock   the time it reads (RealClock; ManualClock in tests)
//	Deps    the registry, the monitor and the pipeline it reads and submits to
package wake

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/inject"
)

// The policies, as they are named in a wake trigger's reason ("wake:quiet+unread").
const (
	PolicyQuiet   = "quiet"
	PolicyUnread  = "unread"
	PolicyDormant = "dormant"
)

// wakeThread is the thread of every wake prompt: the loop guard and the rate limit count
// them together, apart from the agent's other threads.
const wakeThread = "wake"

// Runtimes is the registry (*panes.Registry).
type Runtimes interface {
	List() []nudge.Runtime
	Lookup(workspace, role string) (nudge.Runtime, bool)
}

// Screens is what the monitor saw of a runtime's pane (*detector.Monitor).
type Screens interface {
	Readiness(rt nudge.Runtime) nudge.Readiness
	Collision(rt nudge.Runtime) (busy bool, until time.Time, why string)
	// LastOutput is when the pane last printed; zero when it has not since it was watched.
	LastOutput(runtimeID string) time.Time
}

// Triggers is the trigger pipeline (*inject.Pipeline).
type Triggers interface {
	Submit(ctx context.Context, req inject.Request) (inject.Submitted, error)
	Depth(runtimeID string) int
	Blocked(workspace, agent, thread string) (bool, string)
	Get(id string) (nudge.Trigger, error)
}

// Deps are what a Waker reads and acts through. Audit appends an audit record.
type Deps struct {
	Runtimes Runtimes
	Screens  Screens
	Triggers Triggers
	Audit    func(nudge.AuditRecord)
}

// Bounds of the thread heads kept (Head).
const (
	MaxHeadsPerRuntime = 64
	MaxHeads           = 4096
)

// Waker evaluates the wake policies. It owns one goroutine, started by New (only when a
// policy is on) and stopped and joined by Close.
type Waker struct {
	cfg    Config
	d      Deps
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
	start  time.Time // New's time: quiet counts from here for a pane not yet heard from

	mu        sync.Mutex
	firstSeen map[string]time.Time // runtime id -> when a round first saw it (what is kept of it)
	woken     map[string]time.Time // runtime id + "/" + policy -> its last wake prompt
	sentWS    map[string]time.Time // workspace -> its last wake prompt
	skipped   map[string]string    // runtime id -> the kind of skip audited last
	heads     map[string]map[string]head
	nHeads    int
}

// head is a thread's newest message as reported for an agent (Head).
type head struct {
	head  string
	since time.Time // when it was first reported
}

// New returns a Waker; its goroutine runs while a policy is on. The caller calls Close.
func New(cfg Config, d Deps) *Waker {
	cfg.complete()
	w := &Waker{cfg: cfg, d: d, firstSeen: map[string]time.Time{}, woken: map[string]time.Time{},
		sentWS: map[string]time.Time{}, skipped: map[string]string{}, heads: map[string]map[string]head{}}
	w.start = cfg.Clock.Now()
	w.ctx, w.cancel = context.WithCancel(context.Background())
	if cfg.On() {
		w.wg.Add(1)
		go w.loop()
	}
	return w
}

// Close stops the goroutine and waits for it (a wake prompt being submitted is given up).
// Idempotent.
func (w *Waker) Close() {
	w.once.Do(func() {
		w.cancel()
		w.wg.Wait()
	})
}

func (w *Waker) loop() {
	defer w.wg.Done()
	for {
		select {
		case <-w.ctx.Done():
			return
		case <-w.cfg.Clock.After(w.cfg.Every):
			w.Round()
		}
	}
}

// Head records that thread's newest message for the agent (role or agent_id) of
// workspace is head: until the agent's read cursor (its heartbeats' cursor) equals it,
// the thread is unread, and after Config.Unread the agent is woken. An unchanged head
// keeps its age. The thread and head are ids ([A-Za-z0-9_.:@/-]{1,128}).
func (w *Waker) Head(workspace, agent, thread, h string) (nudge.Runtime, error) {
	if w.cfg.Unread <= 0 {
		return nudge.Runtime{}, nudge.NewError(nudge.Unavailable, "the unread wake policy is off (serve --wake-unread)")
	}
	if err := nudge.CheckID("thread_id", thread); err != nil {
		return nudge.Runtime{}, err
	}
	if err := nudge.CheckID("head", h); err != nil {
		return nudge.Runtime{}, err
	}
	rt, ok := w.d.Runtimes.Lookup(workspace, agent)
	if !ok {
		return nudge.Runtime{}, nudge.NewError(nudge.NotFound, "no runtime "+workspace+"/"+agent)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	hs := w.heads[rt.RuntimeID]
	if old, ok := hs[thread]; ok {
		if old.head != h {
			hs[thread] = head{h, old.since} // still unread since the first unread head
		}
		return rt, nil
	}
	if len(hs) >= MaxHeadsPerRuntime || w.nHeads >= MaxHeads {
		return rt, nudge.NewError(nudge.Conflict, fmt.Sprintf("too many unread threads (at most %d per runtime, %d in all)", MaxHeadsPerRuntime, MaxHeads))
	}
	if hs == nil {
		hs = map[string]head{}
		w.heads[rt.RuntimeID] = hs
	}
	hs[thread] = head{h, w.cfg.Clock.Now()}
	w.nHeads++
	return rt, nil
}

// Woken is one wake prompt a Round sent.
type Woken struct {
	RuntimeID string
	Policies  []string
	TriggerID string
	Err       error // Submit's error, if any
}

// Round evaluates every policy once, now, and sends the wake prompts that are due. The
// goroutine calls it every Config.Every; tests call it after moving a ManualClock.
func (w *Waker) Round() []Woken {
	now := w.cfg.Clock.Now()
	var out []Woken
	for _, p := range w.plan(now) {
		out = append(out, w.send(p, now))
	}
	return out
}

// finding is one policy due for a runtime: since when it holds, and what the prompt says.
type finding struct {
	policy string
	since  time.Time
	text   string
}

// plan is one wake prompt to send.
type plan struct {
	rt    nudge.Runtime
	found []finding
}

// plan decides, under the lock, which runtimes get a wake prompt now.
func (w *Waker) plan(now time.Time) []plan {
	rts := w.d.Runtimes.List()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.forget(rts)
	byWS := map[string][]plan{}
	for _, rt := range rts {
		found := w.due(rt, now)
		if len(found) == 0 {
			delete(w.skipped, rt.RuntimeID)
			continue
		}
		if kind, why := w.busy(rt, now); kind != "" {
			w.skip(rt, found, kind, why)
			continue
		}
		byWS[rt.WorkspaceID] = append(byWS[rt.WorkspaceID], plan{rt, found})
	}
	var out []plan
	for ws, ps := range byWS {
		if p, ok := w.pick(ws, ps, now); ok {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].rt.RuntimeID < out[j].rt.RuntimeID })
	return out
}

// pick chooses the one runtime of workspace ws woken now, if the gap allows one: the
// runtime waiting longest (ps is in role order, so a tie goes to the first role). The
// others are skipped. The lock is held.
func (w *Waker) pick(ws string, ps []plan, now time.Time) (plan, bool) {
	sort.SliceStable(ps, func(i, j int) bool { return oldest(ps[i].found).Before(oldest(ps[j].found)) })
	if last, ok := w.sentWS[ws]; ok && now.Sub(last) < w.cfg.Gap {
		for _, p := range ps {
			w.skip(p.rt, p.found, "gap", fmt.Sprintf("workspace %s got a wake prompt %s ago (at most one per %s)", ws, now.Sub(last).Round(time.Second), w.cfg.Gap))
		}
		return plan{}, false
	}
	for _, p := range ps[1:] {
		w.skip(p.rt, p.found, "gap", fmt.Sprintf("another agent of workspace %s is woken first (at most one per %s)", ws, w.cfg.Gap))
	}
	w.sentWS[ws] = now
	for _, f := range ps[0].found {
		w.woken[ps[0].rt.RuntimeID+"/"+f.policy] = now
	}
	delete(w.skipped, ps[0].rt.RuntimeID)
	return ps[0], true
}

func oldest(fs []finding) time.Time {
	t := fs[0].since
	for _, f := range fs[1:] {
		if f.since.Before(t) {
			t = f.since
		}
	}
	return t
}

// forget drops what is kept of runtimes that are gone, and remembers new ones.
func (w *Waker) forget(rts []nudge.Runtime) {
	live := make(map[string]bool, len(rts))
	now := w.cfg.Clock.Now()
	for _, rt := range rts {
		live[rt.RuntimeID], live["ws:"+rt.WorkspaceID] = true, true
		if _, ok := w.firstSeen[rt.RuntimeID]; !ok {
			w.firstSeen[rt.RuntimeID] = now
		}
	}
	for id := range w.firstSeen {
		if !live[id] {
			delete(w.firstSeen, id)
			delete(w.skipped, id)
			w.nHeads -= len(w.heads[id])
			delete(w.heads, id)
			for _, p := range []string{PolicyQuiet, PolicyUnread, PolicyDormant} {
				delete(w.woken, id+"/"+p)
			}
		}
	}
	for ws := range w.sentWS {
		if !live["ws:"+ws] {
			delete(w.sentWS, ws)
		}
	}
}

// due lists the policies that hold for rt now. Each counts from the later of the moment
// it began to hold and the runtime's last wake prompt for it (one prompt per spell), and
// its prompt says how long that is: the same words each spell, so wake prompts that
// change nothing trip the loop guard.
func (w *Waker) due(rt nudge.Runtime, now time.Time) []finding {
	if !rt.Managed || rt.Status != nudge.StatusReady {
		return nil // starting, triggering, offline, exited, paused, ...: not for a wake prompt
	}
	var out []finding
	add := func(policy string, since time.Time, after time.Duration, text func(time.Duration) string) {
		if last := w.woken[rt.RuntimeID+"/"+policy]; last.After(since) {
			since = last
		}
		if after > 0 && !since.IsZero() && now.Sub(since) >= after {
			out = append(out, finding{policy, since, text(now.Sub(since).Round(time.Minute))})
		}
	}
	if w.cfg.Quiet > 0 {
		since := w.d.Screens.LastOutput(rt.RuntimeID)
		if since.IsZero() { // nothing printed since it was watched: since then
			since = w.start
			if rt.CreatedAt.After(since) {
				since = rt.CreatedAt
			}
		}
		add(PolicyQuiet, since, w.cfg.Quiet, func(d time.Duration) string {
			return fmt.Sprintf("%s (No output for %s.)", w.cfg.QuietPrompt, d)
		})
	}
	if w.cfg.Unread > 0 {
		w.unread(rt, add)
	}
	if w.cfg.Dormant > 0 && !rt.LastHeartbeatAt.IsZero() {
		add(PolicyDormant, rt.LastHeartbeatAt, w.cfg.Dormant, func(d time.Duration) string {
			return fmt.Sprintf("%s (No heartbeat for %s.)", w.cfg.DormantPrompt, d)
		})
	}
	return out
}

// unread adds one finding for the threads whose head rt's cursor has not reached, and
// forgets the heads it has.
func (w *Waker) unread(rt nudge.Runtime, add func(string, time.Time, time.Duration, func(time.Duration) string)) {
	hs := w.heads[rt.RuntimeID]
	var threads []string
	var since time.Time
	for thread, h := range hs {
		if rt.LastCursor == h.head {
			delete(hs, thread) // read
			w.nHeads--
			continue
		}
		if since.IsZero() || h.since.Before(since) {
			since = h.since
		}
		threads = append(threads, thread+" (head "+h.head+")")
	}
	if len(threads) == 0 {
		return
	}
	sort.Strings(threads)
	// The cursor is the agent's own word (its heartbeats): it goes into the prompt only
	// as an id, never as text the agent wrote for nudge to type back to it.
	cursor := rt.LastCursor
	switch {
	case cursor == "":
		cursor = "none"
	case !nudge.ValidID(cursor):
		cursor = "not an id"
	}
	add(PolicyUnread, since, w.cfg.Unread, func(time.Duration) string {
		return fmt.Sprintf("%s (Unread: %s; your cursor: %s.)", w.cfg.UnreadPrompt, strings.Join(threads, ", "), cursor)
	})
}

// busy says why rt must not be prompted now (seed 004: "don't prompt if PS actively
// responding"), as a kind and a reason, or "" when it may be.
func (w *Waker) busy(rt nudge.Runtime, now time.Time) (kind, why string) {
	if rt.Paused {
		return "paused", "runtime is paused"
	}
	if r := w.d.Screens.Readiness(rt); r != nudge.Ready {
		return "busy", "agent is " + string(r)
	}
	if busy, _, why := w.d.Screens.Collision(rt); busy {
		return "human", "a human is at the pane: " + why
	}
	if n := w.d.Triggers.Depth(rt.RuntimeID); n > 0 {
		return "queued", fmt.Sprintf("%d triggers already queued for the agent", n)
	}
	// A prompt from anyone (a schedule, the orchestrator) within the gap is the one the
	// seed allows: the agent is being driven, not forgotten.
	if rt.LastTriggerID != "" {
		if t, err := w.d.Triggers.Get(rt.LastTriggerID); err == nil && now.Sub(prompted(t)) < w.cfg.Gap {
			return "recent", fmt.Sprintf("trigger %s prompted the agent %s ago (at most one per %s)", t.TriggerID, now.Sub(prompted(t)).Round(time.Second), w.cfg.Gap)
		}
	}
	// Wake prompts that changed nothing tripped the loop guard (seed 000 §14): stop
	// sending them, each would fail, until someone runs `nudge unblock wake`.
	if b, why := w.d.Triggers.Blocked(rt.WorkspaceID, rt.Role, wakeThread); b {
		return "blocked", "thread " + wakeThread + " is blocked for the agent (" + why + "; nudge unblock " + wakeThread + ")"
	}
	return "", ""
}

// prompted is when t reached its agent: typed, else accepted.
func prompted(t nudge.Trigger) time.Time {
	if t.InjectedAt != nil {
		return *t.InjectedAt
	}
	return t.CreatedAt
}

// skip audits that a due wake prompt was not sent: once per runtime and kind of reason,
// not every round.
func (w *Waker) skip(rt nudge.Runtime, found []finding, kind, why string) {
	if w.skipped[rt.RuntimeID] == kind {
		return
	}
	w.skipped[rt.RuntimeID] = kind
	w.audit(nudge.AuditRecord{Event: "wake_skipped", RuntimeID: rt.RuntimeID, Workspace: rt.WorkspaceID,
		Reason: reason(found) + ": " + why, Detail: detail(rt, found, "")})
}

// send submits p's wake prompt through the pipeline.
func (w *Waker) send(p plan, now time.Time) Woken {
	var b [4]byte
	_, _ = rand.Read(b[:])
	id := fmt.Sprintf("wake_%d_%s", now.UnixMilli(), hex.EncodeToString(b[:]))
	texts := make([]string, len(p.found))
	for i, f := range p.found {
		texts[i] = f.text
	}
	req := inject.Request{TriggerID: id, Workspace: p.rt.WorkspaceID, Agent: p.rt.Role, ThreadID: wakeThread,
		Prompt: strings.Join(texts, "\n"), Reason: reason(p.found), Caller: "wake"}
	_, err := w.d.Triggers.Submit(w.ctx, req)
	rec := nudge.AuditRecord{Event: "wake_sent", TriggerID: id, ThreadID: wakeThread, RuntimeID: p.rt.RuntimeID,
		Workspace: p.rt.WorkspaceID, Reason: req.Reason, Detail: detail(p.rt, p.found, id)}
	if err != nil { // refused before it was a trigger: the record says why
		rec.Event, rec.Reason = "wake_failed", req.Reason+": "+err.Error()
		var ne *nudge.Error
		if errors.As(err, &ne) {
			rec.Code = ne.Code
		}
		w.cfg.Logger.Warn("wake prompt", "runtime_id", p.rt.RuntimeID, "trigger_id", id, "err", err)
	} else {
		w.cfg.Logger.Info("wake prompt", "runtime_id", p.rt.RuntimeID, "trigger_id", id, "reason", req.Reason)
	}
	w.audit(rec)
	return Woken{RuntimeID: p.rt.RuntimeID, Policies: policies(p.found), TriggerID: id, Err: err}
}

// reason is a wake trigger's reason: "wake:" and the policies, joined by "+".
func reason(found []finding) string { return "wake:" + strings.Join(policies(found), "+") }

func policies(found []finding) []string {
	out := make([]string, len(found))
	for i, f := range found {
		out[i] = f.policy
	}
	return out
}

func detail(rt nudge.Runtime, found []finding, triggerID string) json.RawMessage {
	since := map[string]time.Time{}
	for _, f := range found {
		since[f.policy] = f.since
	}
	b, _ := json.Marshal(map[string]any{"agent": rt.Role, "policies": policies(found), "since": since, "trigger_id": triggerID})
	return b
}

func (w *Waker) audit(r nudge.AuditRecord) {
	if w.d.Audit != nil {
		w.d.Audit(r)
	}
}
