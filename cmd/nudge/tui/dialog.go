package tui

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"time"

	"github.com/gdamore/tcell/v2"

	"github.com/nudgehq/nudge/cmd/nudge/api"
)

// A runtime's pending dialog (an agent asking for approval): the runtime record's
// "dialog" field, shown on the list and the runtime's page, answered with the option's
// number and a reason (POST /v1/runtimes/{id}/answer).

// dialogView is a runtime record's "dialog" field; nil when no dialog is up.
type dialogView struct {
	DialogID string         `json:"dialog_id"`
	Title    string         `json:"title"`
	Text     string         `json:"text"`
	Options  []dialogOption `json:"options"`
	ShownAt  time.Time      `json:"shown_at"`
}

type dialogOption struct {
	Key   string `json:"key"`
	Label string `json:"label"`
}

// dialogOf reads the dialog field of a runtime record's JSON.
func dialogOf(raw json.RawMessage) *dialogView {
	var r struct {
		Dialog *dialogView `json:"dialog"`
	}
	if json.Unmarshal(raw, &r) != nil || r.Dialog == nil || r.Dialog.DialogID == "" {
		return nil
	}
	return r.Dialog
}

// runtimesWithDialogs is GET /v1/runtimes with each record's dialog.
func runtimesWithDialogs(ctx context.Context, c *api.Client) ([]api.Runtime, map[string]*dialogView, error) {
	var raw []json.RawMessage
	if err := c.Do(ctx, "GET", "/v1/runtimes", nil, &raw); err != nil {
		return nil, nil, err
	}
	rts := make([]api.Runtime, 0, len(raw))
	dialogs := map[string]*dialogView{}
	for _, b := range raw {
		var rt api.Runtime
		if err := json.Unmarshal(b, &rt); err != nil {
			return nil, nil, err
		}
		rts = append(rts, rt)
		if d := dialogOf(b); d != nil {
			dialogs[rt.RuntimeID] = d
		}
	}
	return rts, dialogs, nil
}

// answerRequest is the body of POST /v1/runtimes/{id}/answer.
type answerRequest struct {
	DialogID string `json:"dialog_id"`
	Choice   string `json:"choice"`
	Reason   string `json:"reason"`
}

// startAnswer asks for a reason to answer the selected runtime's dialog with its n-th
// option (1-based).
func (ui *watchUI) startAnswer(n int) {
	m := ui.m
	d := m.dialogs[m.sel]
	if d == nil || n < 1 || n > len(d.Options) {
		return
	}
	m.answering = &pendingAnswer{runtime: m.sel, dialog: d.DialogID, option: d.Options[n-1]}
	m.answerReason, m.msg = nil, ""
}

// pendingAnswer is an answer being given a reason.
type pendingAnswer struct {
	runtime, dialog string
	option          dialogOption
}

func (ui *watchUI) answerKey(ev *tcell.EventKey) {
	m := ui.m
	switch ev.Key() {
	case tcell.KeyEscape:
		m.answering, m.answerReason, m.msg = nil, nil, "answer cancelled"
	case tcell.KeyEnter:
		a, reason := *m.answering, strings.TrimSpace(string(m.answerReason))
		if reason == "" {
			m.msg = "a reason is required"
			return
		}
		m.answering, m.answerReason = nil, nil
		ui.async(func(ctx context.Context) string {
			req := answerRequest{DialogID: a.dialog, Choice: a.option.Key, Reason: reason}
			if err := ui.c.Do(ctx, "POST", "/v1/runtimes/"+url.PathEscape(a.runtime)+"/answer", req, nil); err != nil {
				return "answer " + a.runtime + ": " + err.Error()
			}
			return "answered " + a.runtime + ": " + a.option.Label
		})
	case tcell.KeyBackspace, tcell.KeyBackspace2:
		if n := len(m.answerReason); n > 0 {
			m.answerReason = m.answerReason[:n-1]
		}
	case tcell.KeyRune:
		if len(m.answerReason) < 200 {
			m.answerReason = append(m.answerReason, ev.Rune())
		}
	}
}

// drawDialog shows the selected runtime's dialog from row y; it returns the next row.
func (v *watchView) drawDialog(d *dialogView, y, w int) int {
	st := stateStyle("NEEDS_CONFIRMATION")
	v.put(0, y, "Dialog: "+d.Title+"  (shown "+d.ShownAt.Format("15:04:05")+")", st)
	y++
	lines := strings.Split(strings.TrimSpace(d.Text), "\n")
	for i, l := range lines {
		if i == 3 && len(lines) > 4 {
			v.put(2, y, "…", stDim)
			y++
			break
		}
		v.put(2, y, l, stDefault)
		y++
	}
	x := v.put(2, y, "answer:", stHeader)
	for i, o := range d.Options {
		x = v.put(x, y, "  "+string(rune('1'+i))+" "+o.Label+" ("+o.Key+")", stDefault)
		if x >= w {
			break
		}
	}
	return y + 1
}
