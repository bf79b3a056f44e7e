package tui

import (
	"context"
	"net/url"
	"strings"

	"github.com/gdamore/tcell/v2"

	"github.com/nudgehq/nudge"
)

// A runtime's pending dialog (an agent asking for approval): the runtime record's
// "dialog" field, shown on the list and the runtime's page, answered with the option's
// number and a reason (POST /v1/runtimes/{id}/answer).

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
	d := m.dialog(m.sel)
	if d == nil || n < 1 || n > len(d.Options) {
		return
	}
	m.answering = &pendingAnswer{runtime: m.sel, dialog: d.DialogID, option: d.Options[n-1]}
	m.answerReason, m.msg = nil, ""
}

// pendingAnswer is an answer being given a reason.
type pendingAnswer struct {
	runtime, dialog string
	option          nudge.DialogOption
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
func (v *watchView) drawDialog(d *nudge.Dialog, y, w int) int {
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
