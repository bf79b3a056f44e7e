package inject

import (
	"context"
	"errors"
	"runtime/trace"
	"strings"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/controlmode"
	"github.com/nudgehq/nudge/panes"
)

// runAttempt is the lane's second step: it delivers one attempt of a trigger into its
// runtime's pane through s and says what came of it. It knows nothing of the lane, the
// ledger or the fallback chain: what it needs comes whole in the attempt value (the
// trigger as it stood, its runtime and pane, the collaborators it asks), and what it
// found goes back whole in the outcome, which the lane judges (next) and applies.
//
// An attempt runs in two stages, so that the lane records the typing (injected) before
// the rest: the look and the typing (look at the pane, look for an earlier typing — a
// prompt is never typed twice —, the agent's channel, or the guarded typing of the
// envelope: outcome oTyped, whose next attempt is the Enter stage), then the Enter stage
// (the echo wait, Enter and its one repair, the check that the prompt left the composer).
func runAttempt(ctx context.Context, s Sender, a attempt) outcome {
	if a.entering {
		return a.submit(ctx, s)
	}
	return a.lookAndType(ctx, s)
}

// attempt is one delivery of a trigger, as the lane hands it to runAttempt.
type attempt struct {
	env      *attemptEnv     // the collaborators and timings it uses (read-only)
	pane     *paneWatch      // the runtime's pane as the lane sees it
	tctx     context.Context // the trigger's trace task
	t        nudge.Trigger   // its record when the attempt began
	rt       nudge.Runtime
	prof     panes.Profile
	profOK   bool
	target   string
	envelope string
	received time.Time // when its request came in (zero: its first typing was timed)
	detail   attemptDetail

	maybeTyped   bool      // an earlier attempt or incarnation may have typed it: look first
	keysOnly     bool      // not through the agent's channel
	typedBusy    bool      // the readiness gate saw the agent at work when it let it through
	submitSeq    uint64    // a TUI took its last typing out of the composer at this output count
	unshownSince time.Time // a retry is waiting for the pane to draw after that

	// The Enter stage (set by the typing stage).
	entering   bool
	inComposer bool   // typed before: only Enter was missing
	seq        uint64 // the pane's output count before the typing
}

// attemptEnv is what every attempt of a pipeline asks: its collaborators (Deps) and the
// timings of Config.
type attemptEnv struct {
	gates   Gates
	acks    Acker
	channel Channel
	now     func() time.Time
	bus     *nudge.Bus // a first typing's time goes on it (nudge.TriggerTyped)

	echoTimeout, submitTimeout, submitQuiet time.Duration
}

// attemptDetail is what an attempt's audit record says about it.
type attemptDetail struct {
	Attempt                int    `json:"attempt"`
	Target                 string `json:"target"`
	Typed                  bool   `json:"typed"`
	EchoSeen               bool   `json:"echo_seen"`
	Repaired               bool   `json:"enter_repaired,omitempty"`
	Composer               string `json:"composer,omitempty"`
	ForceOverrideRequested bool   `json:"force_override_requested"`
	ForceOverrideApplied   bool   `json:"force_override_applied"`
	OverrideIntent         string `json:"override_intent,omitempty"`
	OverrideReasonPrefix   string `json:"override_reason_prefix,omitempty"`
	CollisionGate          string `json:"collision_gate"`
}

func newDetail(t nudge.Trigger, target string, gates bool) attemptDetail {
	d := attemptDetail{Attempt: t.Attempts + 1, Target: target, CollisionGate: "enforced"}
	if !gates {
		d.CollisionGate = "not_evaluated"
	}
	if t.ForceOverride {
		d.ForceOverrideRequested, d.ForceOverrideApplied = true, true
		d.CollisionGate = "bypassed"
		d.OverrideIntent = t.OverrideIntent
		if d.OverrideIntent == "" {
			d.OverrideIntent = "coordinator_override"
		}
		d.OverrideReasonPrefix = d.OverrideIntent + ":"
	}
	return d
}

func paneTarget(rt nudge.Runtime) string {
	if rt.PaneID != "" {
		return rt.PaneID
	}
	return rt.Target
}

func (a *attempt) id() string { return a.t.TriggerID }

// lookAndType is the first stage: up to the typing.
func (a attempt) lookAndType(ctx context.Context, s Sender) outcome {
	pending, o, done := a.lookAtPane(ctx, s)
	if done {
		return o
	}
	if o, done := a.answered(ctx, s); done {
		return o
	}
	reg := trace.StartRegion(a.tctx, "deliver.look")
	f, err := a.lookBeforeTyping(ctx, s)
	reg.End()
	if err != nil {
		return outcome{kind: oConnDown, err: err}
	}
	if pending == a.id() { // typed by an earlier attempt, only Enter is missing
		f = foundInComposer
	}
	switch f {
	case foundUnrecorded, foundSubmitted:
		return outcome{kind: oFound, connUp: true, unrecorded: f == foundUnrecorded, detail: a.detail}
	}
	if f != foundInComposer {
		if o, ok := a.viaChannel(ctx); ok {
			return o
		}
	}
	return a.typeInto(ctx, s, f == foundInComposer)
}

// needsPaneCheck says whether to ask tmux about the pane before typing (needsPaneCheck).
func (a *attempt) needsPaneCheck() bool {
	return needsPaneCheck(a.pane, a.maybeTyped, a.t.Attempts, a.env.gates != nil, a.envelope)
}

// lookAtPane makes the pane check before typing, when one is needed, and returns the
// trigger whose envelope waits unentered at the cursor (pending). done says that the
// attempt ends here: another trigger's envelope is pending (oPending), or the pane cannot
// take input now.
func (a *attempt) lookAtPane(ctx context.Context, s Sender) (pending string, o outcome, done bool) {
	var v verdict
	var stop bool
	if a.needsPaneCheck() {
		reg := trace.StartRegion(a.tctx, "deliver.pane-check")
		v, stop, pending, _ = paneCheck(ctx, s, a.target, a.pane)
		reg.End()
	}
	a.pane.clean.Store(false) // until this delivery is confirmed
	if !stop && pending != "" && pending != a.id() {
		// Another trigger's envelope waits unentered in the input line (its daemon died
		// before Enter, or its Enter was refused): typing after it would merge the two.
		return pending, outcome{kind: oPending, pending: pending}, true
	}
	if stop {
		return pending, paneStopped(v), true
	}
	return pending, outcome{}, false
}

// paneStopped is the outcome of a pane check that stopped the attempt.
func paneStopped(v verdict) outcome {
	switch v.kind {
	case waitConn:
		return outcome{kind: oConnDown, err: errors.New(v.why)}
	case hold:
		return outcome{kind: oPaneHeld, v: v}
	}
	return outcome{kind: oFallback, v: v}
}

// answered reports whether the trigger must not be typed (again) because the agent has
// it: acked already, or, for a retry, still taking in the prompt it took out of its
// composer.
func (a *attempt) answered(ctx context.Context, s Sender) (outcome, bool) {
	acks := a.env.acks
	if a.t.Attempts > 0 {
		// A retry: the agent may have answered during the backoff, or drawn its marker
		// in a way the stream did not show. A prompt is never given twice to an agent
		// that answered.
		if sig, ok := ackedMeanwhile(ctx, acks, s, a.rt, a.id()); ok {
			return outcome{kind: oAcked, signal: sig}, true
		}
		if sig, ok := inRecord(ctx, acks, a.t.RuntimeID, a.id()); ok {
			return outcome{kind: oAcked, signal: sig}, true
		}
		if a.submitSeq != 0 && a.pane.outSeq.Load() == a.submitSeq {
			return outcome{kind: oUnshown}, true
		}
		if !a.unshownSince.IsZero() {
			return outcome{kind: oShown}, true
		}
	}
	if acks != nil {
		acks.Expect(a.t)
		// The agent's record may show it has the prompt already (a daemon restarted
		// between typing and recording it): it is not typed again.
		if sig, ok := ackedNow(ctx, acks, a.id()); ok {
			return outcome{kind: oAcked, signal: sig}, true
		}
	}
	return outcome{}, false
}

// viaChannel delivers the trigger through the agent's own channel, if it has one, and
// reports whether it did (oHanded): then it is submitted and its ack awaited as for a
// typed prompt; an error that may have left the prompt with the agent counts as
// submitted too (the agent's record says, and a retry looks there before anything goes
// again).
func (a *attempt) viaChannel(ctx context.Context) (outcome, bool) {
	ch := a.env.channel
	if ch == nil || a.envelope == "" || a.keysOnly {
		return outcome{}, false
	}
	reg := trace.StartRegion(a.tctx, "deliver.channel")
	a.handed()
	backend, err := ch.Deliver(ctx, a.rt, a.envelope)
	reg.End()
	if errors.Is(err, ErrNoChannel) {
		return outcome{}, false
	}
	a.pane.clean.Store(true) // nothing was typed into the composer
	note := "handed to the agent through " + backend
	if err != nil {
		note = "sent through " + backend + ", its answer lost (" + err.Error() + "): the agent's record decides"
	}
	d := a.detail
	d.Typed, d.EchoSeen = false, false
	return outcome{kind: oHanded, connUp: true, backend: backend, note: note, detail: d}, true
}

// typeInto types the envelope into the pane (unless it waits in the composer already)
// and returns oTyped, whose next attempt is the Enter stage.
func (a attempt) typeInto(ctx context.Context, s Sender, inComposer bool) outcome {
	a.handed()
	if a.env.gates != nil {
		a.env.gates.Injecting(a.rt.RuntimeID, a.env.now().Add(a.env.echoTimeout+a.env.submitTimeout))
	}
	a.seq = a.pane.outSeq.Load()
	o := outcome{kind: oTyped, connUp: true, typedNow: !inComposer}
	if !inComposer {
		reg := trace.StartRegion(a.tctx, "deliver.type")
		o.timed, o.err = a.typeEnvelope(ctx, s)
		reg.End()
	}
	a.entering, a.inComposer = true, inComposer
	a.detail.Typed = !inComposer
	o.detail, o.next = a.detail, a
	return o
}

// handed tells the Acker that the trigger is being typed or handed to its runtime now,
// before it is: the agent's record may show the prompt before the typing returns. A
// marker or a record line naming it from before (the agent's own writing, while it was
// queued) acks nothing.
func (a *attempt) handed() {
	if h, ok := a.env.acks.(hander); ok {
		h.Handed(a.rt.RuntimeID, a.id())
	}
}

// shellOK reports whether the pane may be typed into while a shell holds its
// foreground: only a runtime whose profile drives a shell (panes.Profile.DrivesShell).
func (a *attempt) shellOK() bool { return a.profOK && a.prof.DrivesShell() }

// typeEnvelope writes the typing's commands to tmux; timed says that the request's time
// to its first typing was published (nudge.TriggerTyped).
func (a *attempt) typeEnvelope(ctx context.Context, s Sender) (timed bool, err error) {
	if a.envelope == "" {
		return false, errors.New("nothing to type: the trigger has no envelope")
	}
	buf := "nudge-" + strings.Map(func(r rune) rune {
		if r < 128 && nudge.IsIDByte(byte(r)) && r != ':' && r != '/' && r != '@' {
			return r
		}
		return '_'
	}, a.id())
	cmds, err := TypeCommandsInto(a.target, a.rt.PID, a.shellOK(), a.envelope, buf)
	if err != nil {
		return false, err
	}
	if !a.received.IsZero() {
		nudge.Publish(a.env.bus, nudge.TriggerTyped{TriggerID: a.id(), Took: time.Since(a.received)})
		timed = true
	}
	if il, ok := a.env.gates.(InputLine); ok {
		il.Typed(a.t.RuntimeID, a.envelope)
	}
	_, err = s.DoAll(ctx, cmds...)
	if errors.Is(err, controlmode.ErrPaneGone) && len(cmds) > 1 {
		s.Do(ctx, "delete-buffer -b "+quote(buf)) // the paste did not take it
	}
	return timed, err
}

// lookBeforeTyping checks, for a trigger an earlier attempt or incarnation may have
// typed, whether its envelope is still in the composer (then only Enter is needed) or
// already in the pane's history (then it was submitted). The history holds one echo of
// the envelope per typing: more echoes than attempts whose typing was recorded before
// this one means a typing that was never recorded (the daemon died between typing and
// recording: foundUnrecorded). A retry after an ack timeout finds only the
// recorded echoes and types again on purpose. err is a control connection that went
// down under the capture (the pane may be fine: try again later).
func (a *attempt) lookBeforeTyping(ctx context.Context, s Sender) (found, error) {
	t := a.t
	if !a.maybeTyped && t.Attempts == 0 {
		return notFound, nil
	}
	needle := "id=" + t.TriggerID
	r, err := s.Do(ctx, "capture-pane -p -J -S -500 -t "+quote(a.target))
	if err != nil || r == nil {
		if connDown(err) {
			return notFound, err
		}
		return notFound, nil
	}
	echoes := 0
	for _, line := range r.Lines {
		if containsID(line, needle) {
			echoes++
		}
	}
	if gates := a.env.gates; gates != nil {
		// In the composer: only Enter is missing (also when the history shows no echo:
		// the agent may have folded it into a paste placeholder).
		if c, err := gates.Composer(ctx, a.rt); err == nil && a.holds(c) {
			return foundInComposer, nil
		}
	}
	if echoes == 0 {
		return notFound, nil // never typed (or scrolled far away: type again)
	}
	done := t.Attempts // attempts whose typing was recorded and whose fate is known
	if t.State == nudge.StateInjected {
		done-- // the last one was typed; was it submitted? Not in the composer: yes
	}
	switch {
	case echoes <= done:
		return notFound, nil
	case t.State != nudge.StateInjected:
		return foundUnrecorded, nil
	}
	return foundSubmitted, nil
}

// found is what lookBeforeTyping found of a trigger in its pane.
type found uint8

const (
	notFound        found = iota // not in the pane (or only its recorded typings): type it
	foundInComposer              // typed and waiting in the composer: only Enter is missing
	foundSubmitted               // in the pane's history: submitted, its typing recorded
	foundUnrecorded              // in the history, typed by an incarnation that died before recording it
)

// containsID reports whether s holds needle ("id=X") followed by a non-id byte or the end.
func containsID(s, needle string) bool {
	for {
		i := strings.Index(s, needle)
		if i < 0 {
			return false
		}
		rest := s[i+len(needle):]
		if rest == "" || !nudge.IsIDByte(rest[0]) {
			return true
		}
		s = rest
	}
}

// holds reports whether the composer text c is the trigger's envelope: the text itself,
// or the placeholder(s) the agent folded it into when it took it as a large paste
// ("[Pasted Content 4096 chars][Pasted Content 1525 chars]"), whose sizes add up to it.
func (a *attempt) holds(c string) bool {
	if containsID(c, "id="+a.id()) {
		return true
	}
	il, ok := a.env.gates.(InputLine)
	return ok && c != "" && il.Ours(a.rt, c, a.envelope)
}
