// Package dialogs answers an agent's approval dialog from afar: `nudge answer`, `nudge
// approve`, `nudge deny`, POST /v1/runtimes/{id}/answer and the MCP answer tool all come
// here. The dialog is read from the pane at the moment of answering (detector.ParseDialog
// through the control connection); the key goes only if it is the dialog the caller
// named, no human is typing at the pane, and the pane still runs the runtime's program
// (the same if-shell guard as a prompt's keys). The caller records the answer in the
// audit log and on the event stream.
//
// Ownership: an Answerer holds no goroutine; Answer runs on the caller's.
package dialogs

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/controlmode"
	"github.com/nudgehq/nudge/panes"
)

// Config is what an Answerer reads.
type Config struct {
	// Screen reads the dialog on rt's pane now (detector.Monitor.DialogNow).
	Screen func(ctx context.Context, rt nudge.Runtime) (*nudge.Dialog, error)
	// Busy reports a human at the pane (detector.Monitor.Collision).
	Busy func(rt nudge.Runtime) (bool, time.Time, string)
	// Conn is the workspace's control connection.
	Conn func(workspace string) (Doer, error)
	// Reclassify asks for rt's screen to be read again after the answer (may be nil).
	Reclassify func(runtimeID string)
	// OnAnswer is told of each answer typed (the event stream); may be nil.
	OnAnswer func(rt nudge.Runtime, d nudge.Dialog, opt nudge.DialogOption, who, reason string)
}

// Doer runs one tmux command (*controlmode.Conn).
type Doer interface {
	Do(ctx context.Context, cmd string) (*controlmode.Reply, error)
}

// Answerer types answers into dialogs.
type Answerer struct{ cfg Config }

// New returns an Answerer.
func New(cfg Config) *Answerer { return &Answerer{cfg: cfg} }

// Answer reads rt's dialog now and, if it is the one dialogID names ("" = whatever dialog
// is on screen), presses the key of the chosen option: its key, its 1-based number, or
// "approve"/"deny" for the dialog's yes and no. It returns the dialog as it was and the
// option picked. who and reason are the caller's, for OnAnswer. Errors: NO_DIALOG (none shown), DIALOG_CHANGED (another one is; its
// message says what is there now), BAD_REQUEST (no such option), OPERATOR_BUSY (a human
// is typing at the pane), PANE_DEAD.
func (a *Answerer) Answer(ctx context.Context, rt nudge.Runtime, dialogID, choice, who, reason string) (nudge.Dialog, nudge.DialogOption, error) {
	var none nudge.DialogOption
	if !panes.Live(rt.Status) || rt.PaneID == "" {
		return nudge.Dialog{}, none, nudge.NewError(nudge.PaneDead, "runtime "+rt.RuntimeID+" is "+string(rt.Status)+": nothing to answer")
	}
	d, err := a.cfg.Screen(ctx, rt)
	if err != nil {
		return nudge.Dialog{}, none, nudge.NewError(nudge.TargetNotFound, "read the screen of "+rt.RuntimeID+": "+err.Error())
	}
	if d == nil {
		return nudge.Dialog{}, none, nudge.NewError(nudge.NoDialog, "runtime "+rt.RuntimeID+" shows no dialog nudge can read now (readiness "+string(rt.Readiness)+"); `nudge tail "+rt.RuntimeID+"` shows its screen")
	}
	if dialogID != "" && dialogID != d.DialogID {
		return *d, none, nudge.NewError(nudge.DialogChanged, "the dialog changed: "+Describe(*d))
	}
	opt, err := pick(*d, choice)
	if err != nil {
		return nudge.Dialog{}, none, err
	}
	if a.cfg.Busy != nil {
		if busy, _, why := a.cfg.Busy(rt); busy {
			return nudge.Dialog{}, none, nudge.NewError(nudge.OperatorBusy, "a human is at the pane ("+why+"): not answered; try again when they stop")
		}
	}
	conn, err := a.cfg.Conn(rt.WorkspaceID)
	if err != nil {
		return nudge.Dialog{}, none, err
	}
	key, err := controlmode.Quote(opt.Key)
	if err != nil {
		return nudge.Dialog{}, none, nudge.NewError(nudge.BadRequest, "option key "+opt.Key+": "+err.Error())
	}
	target, err := controlmode.Quote(rt.PaneID)
	if err != nil {
		return nudge.Dialog{}, none, err
	}
	line, err := controlmode.IfPane(rt.PaneID, rt.PID, "send-keys -t "+target+" "+key)
	if err != nil {
		return nudge.Dialog{}, none, err
	}
	if _, err := conn.Do(ctx, line); err != nil {
		return nudge.Dialog{}, none, nudge.NewError(nudge.SendKeysError, "answer "+rt.RuntimeID+": "+err.Error())
	}
	if a.cfg.Reclassify != nil {
		a.cfg.Reclassify(rt.RuntimeID)
	}
	if a.cfg.OnAnswer != nil {
		a.cfg.OnAnswer(rt, *d, opt, who, reason)
	}
	return *d, opt, nil
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
	if i := slices.IndexFunc(d.Options, func(o nudge.DialogOption) bool { return o.Key == key }); i >= 0 {
		return d.Options[i], nil
	}
	var n int
	if _, err := fmt.Sscanf(key, "%d", &n); err == nil && fmt.Sprint(n) == key && n >= 1 && n <= len(d.Options) {
		return d.Options[n-1], nil
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
