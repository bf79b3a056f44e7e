// Package dialogs answers an agent's approval dialog from afar: `nudge answer`, `nudge
// approve`, `nudge deny`, POST /v1/runtimes/{id}/answer and the MCP answer tool all come
// here. The dialog is read from the pane at the moment of answering (detector.ParseDialog
// through the control connection, from a capture that classifies as NEEDS_CONFIRMATION);
// the key goes only if it is the dialog the caller named, no human is typing at the
// pane, the pane has not drawn since that capture, and the pane still runs the runtime's
// program (the same if-shell guard as a prompt's keys). One answer goes at a time per
// runtime, and a dialog answered is not answered again until a capture shows it gone: a
// second answer never lands on the dialog that follows. The one exception is a key the
// agent lost (it came before the dialog listened for keys): a dialog still shown on a pane
// that has drawn nothing for notTaken since the key went may be answered again, and the
// policy's answer does so itself. The caller records the answer in the audit log and on
// the event stream.
//
// Shown puts each new dialog on the event stream and answers it when the workspace
// policy's auto_answer rules say so (off by default).
//
// Ownership: Answer runs on the caller's goroutine; an automatic answer on one of its own,
// which Close stops and waits for.
package dialogs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/controlmode"
	"github.com/nudgehq/nudge/panes"
)

// Config is what an Answerer reads.
type Config struct {
	// Screen reads the dialog on rt's pane now (detector.Monitor.DialogNow): nil when the
	// capture shows none; drew reports whether the pane has drawn since that capture.
	Screen func(ctx context.Context, rt nudge.Runtime) (d *nudge.Dialog, drew func() bool, err error)
	// Busy reports a human at the pane (detector.Monitor.Collision).
	Busy func(rt nudge.Runtime) (bool, time.Time, string)
	// Conn is the workspace's control connection.
	Conn func(workspace string) (Doer, error)
	// Rule is the workspace policy's automatic answer to a dialog (off: nil, or ok false).
	Rule func(workspace, agent string, d nudge.Dialog) (choice, reason string, ok bool)
	// Runtimes finds a runtime (for Shown).
	Runtimes interface {
		Get(id string) (nudge.Runtime, bool)
	}
	// Channel answers over the agent's own channel the request behind dialog d, with
	// option opt and the caller's reason (approvals.Follower.Answer, permhook.Keeper.Answer):
	// the backend it went by, or "" when it sent nothing (then opt's keys are typed). nil:
	// keys only.
	Channel func(ctx context.Context, rt nudge.Runtime, d nudge.Dialog, opt nudge.DialogOption, reason string) (string, error)
	// Audit records an automatic answer (a caller's answer is audited by the API).
	Audit func(rec nudge.AuditRecord)
	// Bus: from New the Answerer reads the dialogs the screens show on it
	// (nudge.ReadinessChanged: Shown), and publishes each new one (nudge.DialogShown) and
	// each answer it sends (nudge.DialogAnswerSent). nil: it is told by hand, and tells no one.
	Bus *nudge.Bus
}

// Doer runs one tmux command (*controlmode.Conn).
type Doer interface {
	Do(ctx context.Context, cmd string) (*controlmode.Reply, error)
}

// Answerer answers dialogs: over the agent's channel where it states the request (Channel),
// else with the option's keys.
type Answerer struct {
	cfg   Config
	shown sync.Map // runtime id → the id of the last dialog put on the event stream
	wg    sync.WaitGroup
	sub   *nudge.Client   // the dialogs the screens show
	stop  context.Context // ends at Close: the automatic answers give up
	close context.CancelFunc

	mu       sync.Mutex
	sending  map[string]bool   // runtime id → an answer is being read and sent
	answered map[string]answer // runtime id → the dialog answered, until a capture shows it gone
}

// answer is a dialog answered: its id, when the key went, and whether the pane has drawn
// since just before it went (an agent that takes the key redraws at once).
type answer struct {
	dialogID string
	at       time.Time
	drew     func() bool
}

// notTaken is how long a pane that shows the dialog answered, and has drawn nothing since
// the key went, waits before the answer counts as not taken: a key that reached the agent
// before its dialog listened for keys (a CLI still mounting it on a loaded machine) is lost,
// and the dialog may then be answered again.
var notTaken = 4 * time.Second // a variable for tests

// New returns an Answerer reading the screens' dialogs on cfg.Bus; Close stops it.
func New(cfg Config) *Answerer {
	stop, cancel := context.WithCancel(context.Background())
	a := &Answerer{cfg: cfg, sending: map[string]bool{}, answered: map[string]answer{}, stop: stop, close: cancel}
	a.sub = nudge.NewClient(cfg.Bus, "dialogs", 256)
	nudge.Subscribe(a.sub, func(ev nudge.ReadinessChanged) { a.Shown(ev.RuntimeID, ev.Dialog) })
	return a
}

// Close stops reading the bus and the automatic answers under way, and waits for them.
func (a *Answerer) Close() {
	if a != nil {
		a.sub.Close()
		a.close()
		a.wg.Wait()
	}
}

// Shown takes the dialog a runtime's screen shows now (nil: none): a new one goes on the
// event stream (dialog_shown) and, if the workspace policy answers it, is answered in the
// background (audited as the policy's, with its reason). It never blocks.
func (a *Answerer) Shown(runtimeID string, d *nudge.Dialog) {
	id := ""
	if d != nil {
		id = d.DialogID
	}
	a.seen(runtimeID, id)
	if prev, _ := a.shown.Swap(runtimeID, id); d == nil || prev == id {
		return
	}
	rt, ok := a.cfg.Runtimes.Get(runtimeID)
	if !ok {
		return
	}
	nudge.Publish(a.cfg.Bus, nudge.DialogShown{RuntimeID: runtimeID, Workspace: rt.WorkspaceID, Dialog: *d})
	if a.cfg.Rule == nil {
		return
	}
	choice, reason, ok := a.cfg.Rule(rt.WorkspaceID, rt.Agent, *d)
	if !ok {
		return
	}
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		ctx, cancel := context.WithTimeout(a.stop, autoPatience)
		defer cancel()
		got, opt, err := a.autoAnswer(ctx, rt, d.DialogID, choice, reason)
		rec := nudge.AuditRecord{Event: "dialog_answered", RuntimeID: rt.RuntimeID, Workspace: rt.WorkspaceID, Subject: autoSubject,
			Reason: fmt.Sprintf("%s: %q → %s (%s); reason: %s", got.DialogID, got.Title, opt.Label, opt.Key, reason)}
		if err != nil {
			rec.Event, rec.Reason = "dialog_answer_refused", err.Error()+"; policy reason: "+reason
		}
		if a.cfg.Audit != nil {
			a.cfg.Audit(rec)
		}
		if err == nil {
			a.resend(ctx, rt, got.DialogID, choice, reason)
		}
	}()
}

// autoSubject is who answered when the workspace policy did.
const autoSubject = "policy:auto_answer"

// autoPatience is how long the policy's answer keeps trying a dialog that is still shown
// while the pane draws or a human types; autoRetry the pause between tries.
const (
	autoPatience = 30 * time.Second
	autoRetry    = 250 * time.Millisecond
)

// autoAnswer answers rt's dialog dialogID for the policy. A refusal that passes (the pane
// drew while it was read, a human typing) is tried again while
// the runtime still shows that dialog, so a dialog drawn in pieces on a loaded machine is
// not left waiting for a human the policy meant to spare; any other refusal is final.
func (a *Answerer) autoAnswer(ctx context.Context, rt nudge.Runtime, dialogID, choice, reason string) (nudge.Dialog, nudge.DialogOption, error) {
	for {
		got, opt, err := a.Answer(ctx, rt, dialogID, choice, autoSubject, reason)
		var ne *nudge.Error
		if err == nil || !errors.As(err, &ne) || !passing(ne.Code) {
			return got, opt, err
		}
		select {
		case <-ctx.Done():
			return got, opt, err
		case <-time.After(autoRetry):
		}
		if cur, _ := a.shown.Load(rt.RuntimeID); cur != dialogID {
			return got, opt, err // the dialog went (answered at the pane) or another came
		}
		if now, ok := a.cfg.Runtimes.Get(rt.RuntimeID); ok {
			rt = now
		}
	}
}

// resend answers dialogID on rt again, for the policy, while its key was not taken (see
// notTaken), autoResend times at most. The first answer is the one audited.
func (a *Answerer) resend(ctx context.Context, rt nudge.Runtime, dialogID, choice, reason string) {
	for i := 0; i < autoResend && !a.waitTaken(ctx, rt.RuntimeID, dialogID); i++ {
		if _, _, err := a.Answer(ctx, rt, dialogID, choice, autoSubject, reason+" (sent again: the first key was not taken)"); err != nil {
			return
		}
	}
}

// autoResend is how many times the policy answers a dialog again whose key was not taken.
const autoResend = 2

// waitTaken waits until the answer to dialogID on runtime id is taken (the dialog gone, or
// the pane drew since the key went) or counts as lost (notTaken), and reports whether it
// was taken. A context that ends counts as taken: nothing is sent again.
func (a *Answerer) waitTaken(ctx context.Context, id, dialogID string) bool {
	for {
		a.mu.Lock()
		last, ok := a.answered[id]
		a.mu.Unlock()
		cur, _ := a.shown.Load(id)
		switch {
		case !ok || last.dialogID != dialogID || cur != dialogID || (last.drew != nil && last.drew()):
			return true
		case a.lost(last):
			return false
		}
		select {
		case <-ctx.Done():
			return true
		case <-time.After(autoRetry):
		}
	}
}

// passing reports whether a refusal of an answer may be gone a moment later.
func passing(c nudge.Code) bool {
	return c == nudge.DialogChanged || c == nudge.OperatorBusy
}

// Answer reads rt's dialog now and, if it is the one dialogID names ("": the one the
// runtime's record shows, else whatever dialog is on screen), presses the key of the
// chosen option: its key, its 1-based number, or "approve"/"deny" for the dialog's yes
// and no. It returns the dialog as it was and the option picked. who and reason are the
// caller's, for OnAnswer. Errors: NO_DIALOG (none shown), DIALOG_CHANGED (another one is;
// its message says what is there now; or the pane kept drawing), DIALOG_ANSWERED
// (another answer to this runtime is being sent, or this dialog was answered and no
// capture has shown it gone yet), BAD_REQUEST (no such option), OPERATOR_BUSY (a human is
// typing at the pane), PANE_DEAD.
func (a *Answerer) Answer(ctx context.Context, rt nudge.Runtime, dialogID, choice, who, reason string) (nudge.Dialog, nudge.DialogOption, error) {
	var none nudge.DialogOption
	if !panes.Live(rt.Status) || rt.PaneID == "" {
		return nudge.Dialog{}, none, nudge.NewError(nudge.PaneDead, "runtime "+rt.RuntimeID+" is "+string(rt.Status)+": nothing to answer")
	}
	if dialogID == "" && rt.Dialog != nil {
		dialogID = rt.Dialog.DialogID // the dialog the caller could have seen, not the next one
	}
	if !a.begin(rt.RuntimeID) {
		return nudge.Dialog{}, none, nudge.NewError(nudge.DialogAnswered, "another answer to "+rt.RuntimeID+"'s dialog is being sent: not answered")
	}
	defer a.end(rt.RuntimeID)
	d, opt, drew, err := a.read(ctx, rt, dialogID, choice)
	if err != nil {
		return d, none, err
	}
	if drew() { // once more, just before the keys go
		return d, none, nudge.NewError(nudge.DialogChanged, "the pane of "+rt.RuntimeID+" drew while its dialog was read: not answered; try again ("+Describe(d)+")")
	}
	via := ""
	if a.cfg.Channel != nil {
		if via, err = a.cfg.Channel(ctx, rt, d, opt, reason); err != nil {
			return nudge.Dialog{}, none, nudge.NewError(nudge.SendKeysError, "answer "+rt.RuntimeID+": "+err.Error())
		}
	}
	if via == "" {
		if err := a.send(ctx, rt, opt); err != nil {
			return nudge.Dialog{}, none, err
		}
		via = "tmux"
	}
	a.mu.Lock()
	a.answered[rt.RuntimeID] = answer{dialogID: d.DialogID, at: time.Now(), drew: drew}
	a.mu.Unlock()
	// The screen is not read afresh here: the dialog stays the gate's verdict until a
	// capture after the agent's own output shows it gone, so a trigger it held is never
	// typed into a dialog still open (an agent slow to take the key).
	nudge.Publish(a.cfg.Bus, nudge.DialogAnswerSent{RuntimeID: rt.RuntimeID, Workspace: rt.WorkspaceID, DialogID: d.DialogID,
		Title: d.Title, Option: opt, By: who, Reason: reason, Via: via})
	return d, opt, nil
}

// drawTries is how many captures Answer takes of a pane that draws while it reads it,
// drawPause the pause before the next (times the tries so far).
const (
	drawTries = 5
	drawPause = 20 * time.Millisecond
)

// read takes a settled capture of rt's pane (settled) and checks the dialog on it
// against dialogID and the dialog last answered, the choice, and the human at the pane.
// drew reports whether the pane has drawn since that capture.
func (a *Answerer) read(ctx context.Context, rt nudge.Runtime, dialogID, choice string) (_ nudge.Dialog, _ nudge.DialogOption, drew func() bool, err error) {
	var none nudge.DialogOption
	d, drew, err := a.settled(ctx, rt)
	if err != nil {
		return nudge.Dialog{}, none, nil, err
	}
	id := ""
	if d != nil {
		id = d.DialogID
	}
	switch {
	case a.seen(rt.RuntimeID, id):
		return *d, none, nil, nudge.NewError(nudge.DialogAnswered, "dialog "+d.DialogID+" was answered and is still on screen (the agent has not taken the answer yet): not answered again; if the agent asks the same again, answer it in the pane (`nudge attach`)")
	case d == nil:
		return nudge.Dialog{}, none, nil, nudge.NewError(nudge.NoDialog, "runtime "+rt.RuntimeID+" shows no dialog nudge can read now (readiness "+string(rt.Readiness)+"); nothing typed; `nudge tail "+rt.RuntimeID+"` shows its screen")
	case dialogID != "" && dialogID != d.DialogID:
		return *d, none, nil, nudge.NewError(nudge.DialogChanged, "the dialog changed: "+Describe(*d))
	}
	opt, err := pick(*d, choice)
	if err != nil {
		return nudge.Dialog{}, none, nil, err
	}
	if a.cfg.Busy != nil {
		if busy, _, why := a.cfg.Busy(rt); busy {
			return nudge.Dialog{}, none, nil, nudge.NewError(nudge.OperatorBusy, "a human is at the pane ("+why+"): not answered; try again when they stop")
		}
	}
	return *d, opt, drew, nil
}

// settled captures rt's pane until a capture is the last thing the pane drew (drawTries
// at most, a pause between) and returns the dialog on it (nil: none).
func (a *Answerer) settled(ctx context.Context, rt nudge.Runtime) (*nudge.Dialog, func() bool, error) {
	for try := 1; ; try++ {
		d, drew, err := a.cfg.Screen(ctx, rt)
		if err != nil {
			return nil, nil, nudge.NewError(nudge.TargetNotFound, "read the screen of "+rt.RuntimeID+": "+err.Error())
		}
		if !drew() {
			return d, drew, nil
		}
		if try == drawTries {
			what := "no dialog"
			if d != nil {
				what = Describe(*d)
			}
			return nil, nil, nudge.NewError(nudge.DialogChanged, "the pane of "+rt.RuntimeID+" kept drawing while its dialog was read: not answered; try again ("+what+")")
		}
		select {
		case <-ctx.Done():
			return nil, nil, nudge.NewError(nudge.DialogChanged, "the pane of "+rt.RuntimeID+" kept drawing while its dialog was read: not answered ("+ctx.Err().Error()+")")
		case <-time.After(time.Duration(try) * drawPause):
		}
	}
}

// send presses opt's keys in rt's pane, if it still runs rt's program.
func (a *Answerer) send(ctx context.Context, rt nudge.Runtime, opt nudge.DialogOption) error {
	conn, err := a.cfg.Conn(rt.WorkspaceID)
	if err != nil {
		return err
	}
	var keys []string // "Right Right Enter": a row of buttons is answered by moving along it
	for _, k := range strings.Fields(opt.Key) {
		q, err := controlmode.Quote(k)
		if err != nil {
			return nudge.NewError(nudge.BadRequest, "option key "+opt.Key+": "+err.Error())
		}
		keys = append(keys, q)
	}
	target, err := controlmode.Quote(rt.PaneID)
	if err != nil {
		return err
	}
	line, err := controlmode.IfPane(rt.PaneID, rt.PID, "send-keys -t "+target+" "+strings.Join(keys, " "))
	if err != nil {
		return err
	}
	if _, err := conn.Do(ctx, line); err != nil {
		return nudge.NewError(nudge.SendKeysError, "answer "+rt.RuntimeID+": "+err.Error())
	}
	return nil
}

// begin marks an answer to runtime id under way; false when one already is.
func (a *Answerer) begin(id string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.sending[id] {
		return false
	}
	a.sending[id] = true
	return true
}

func (a *Answerer) end(id string) {
	a.mu.Lock()
	delete(a.sending, id)
	a.mu.Unlock()
}

// seen takes a capture's dialog on runtime id (dialogID "" for none) and reports whether
// it is the dialog last answered there, still shown and its answer maybe taken; any other
// forgets that answer, and so does the same dialog when the pane has drawn nothing for
// notTaken since the key went (the key was lost: see notTaken).
func (a *Answerer) seen(id, dialogID string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	last, ok := a.answered[id]
	if ok && last.dialogID == dialogID && !a.lost(last) {
		return true
	}
	delete(a.answered, id)
	return false
}

// lost reports whether answer last was not taken: the pane has drawn nothing since its key
// went, notTaken ago.
func (a *Answerer) lost(last answer) bool {
	return last.drew != nil && time.Since(last.at) >= notTaken && !last.drew()
}

// pick finds the option choice names in d.
func pick(d nudge.Dialog, choice string) (nudge.DialogOption, error) {
	key := choice
	switch strings.ToLower(choice) {
	case "approve", "yes":
		key = d.ApproveKey
	case "deny", "no":
		key = d.DenyKey
	}
	if key == "" {
		return nudge.DialogOption{}, nudge.NewError(nudge.BadRequest, fmt.Sprintf("%q: no option of this dialog reads as that; %s", choice, Describe(d)))
	}
	opt, ok := d.Options[0], false
	if i := slices.IndexFunc(d.Options, func(o nudge.DialogOption) bool { return o.Key == key }); i >= 0 {
		opt, ok = d.Options[i], true
	}
	var n int
	if _, err := fmt.Sscanf(key, "%d", &n); !ok && err == nil && fmt.Sprint(n) == key && n >= 1 && n <= len(d.Options) {
		opt, ok = d.Options[n-1], true
	}
	switch {
	case ok && opt.Key == "":
		return nudge.DialogOption{}, nudge.NewError(nudge.BadRequest, "which of this dialog's buttons is selected cannot be read from its screen: answer it in the pane (`nudge attach`); "+Describe(d))
	case ok:
		return opt, nil
	}
	return nudge.DialogOption{}, nudge.NewError(nudge.BadRequest, fmt.Sprintf("no option %q; %s", choice, Describe(d)))
}

// Describe is a dialog in one line: its id, question and options.
func Describe(d nudge.Dialog) string {
	var opts []string
	for _, o := range d.Options {
		opts = append(opts, o.Key+"="+o.Label)
	}
	return fmt.Sprintf("dialog %s %q, options: %s", d.DialogID, d.Title, strings.Join(opts, "; "))
}
