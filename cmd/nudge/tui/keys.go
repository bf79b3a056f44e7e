package tui

import (
	"context"
	"strings"
	"time"

	"github.com/gdamore/tcell/v2"

	"github.com/nudgehq/nudge/cmd/nudge/api"
)

// key handles one key; it reports whether to quit.
func (ui *watchUI) key(ev *tcell.EventKey) bool {
	m := ui.m
	switch {
	case m.help:
		m.help = false
		return false
	case ev.Key() == tcell.KeyRune && ev.Rune() == '?' && m.forcing == "" && m.answering == nil && !m.filtering:
		m.help = true
		return false
	case m.forcing != "":
		ui.forceKey(ev)
		return false
	case m.answering != nil:
		ui.answerKey(ev)
		return false
	case m.filtering:
		ui.filterKey(ev)
		return false
	case ev.Key() == tcell.KeyCtrlC:
		return true
	case ev.Key() == tcell.KeyEscape || ev.Key() == tcell.KeyRune && ev.Rune() == 'q':
		return ui.back(ev.Key() == tcell.KeyEscape)
	}
	switch m.page {
	case pageList:
		ui.listKey(ev)
	case pageRuntime:
		ui.runtimeKey(ev)
	case pageTrigger:
		ui.triggerKey(ev)
	}
	return false
}

// back leaves the page (or, on the list, clears the filter with Esc, else quits).
func (ui *watchUI) back(esc bool) bool {
	m := ui.m
	switch m.page {
	case pageTrigger:
		m.page = pageRuntime
		ui.fetchDetail(m.sel)
	case pageRuntime:
		m.page = pageList
		m.fixSel()
	default:
		if esc && m.filter != "" {
			m.filter = ""
			m.fixSel()
			return false
		}
		return true
	}
	return false
}

// updown maps ↑↓, j/k and the page keys to a step.
func updown(ev *tcell.EventKey) int {
	switch ev.Key() {
	case tcell.KeyUp:
		return -1
	case tcell.KeyDown:
		return 1
	case tcell.KeyPgUp:
		return -10
	case tcell.KeyPgDn:
		return 10
	case tcell.KeyRune:
		switch ev.Rune() {
		case 'k':
			return -1
		case 'j':
			return 1
		}
	}
	return 0
}

func (ui *watchUI) listKey(ev *tcell.EventKey) {
	m := ui.m
	if d := updown(ev); d != 0 {
		m.move(d)
		return
	}
	if ev.Key() == tcell.KeyEnter {
		if _, ok := m.selected(); ok {
			ui.openRuntime()
		}
		return
	}
	if ev.Key() != tcell.KeyRune {
		return
	}
	switch ev.Rune() {
	case '/':
		m.filtering, m.msg = true, ""
	case 'o':
		m.sort = (m.sort + 1) % sortModes
		m.msg = "sorted by " + m.sort.String()
	default:
		ui.actionKey(ev.Rune())
	}
}

func (ui *watchUI) runtimeKey(ev *tcell.EventKey) {
	m := ui.m
	if d := updown(ev); d != 0 {
		m.histSel = min(max(m.histSel+d, 0), max(len(m.history)-1, 0))
		return
	}
	if ev.Key() == tcell.KeyEnter {
		if t, ok := m.selectedTrigger(); ok {
			m.page, m.trig, m.audit, m.scroll = pageTrigger, t, nil, 0
			ui.fetchTrigger(t.TriggerID)
		}
		return
	}
	if ev.Key() == tcell.KeyRune {
		if r := ev.Rune(); r >= '1' && r <= '9' {
			ui.startAnswer(int(r - '0'))
			return
		}
		ui.actionKey(ev.Rune())
	}
}

func (ui *watchUI) triggerKey(ev *tcell.EventKey) {
	m := ui.m
	if d := updown(ev); d != 0 {
		m.scroll = min(max(m.scroll+d, 0), max(len(m.audit)-1, 0))
		return
	}
	if ev.Key() == tcell.KeyRune {
		switch ev.Rune() {
		case 'f':
			ui.startForce(m.trig)
		case 'r':
			ui.fetchTrigger(m.trig.TriggerID)
		case 'a', 's':
			ui.actionKey(ev.Rune())
		}
	}
}

// actionKey is a key that acts on the selected runtime, on the list and its page.
func (ui *watchUI) actionKey(r rune) {
	m := ui.m
	switch r {
	case 'a', 's':
		ui.attach()
	case 'p':
		ui.togglePause()
	case 'f':
		if rt, ok := m.selected(); ok {
			id := m.fleet.Deferred(rt.RuntimeID)
			if id == "" {
				m.msg = "no deferred trigger for " + rt.RuntimeID
				return
			}
			ui.startForce(api.Trigger{TriggerID: id})
		}
	case 'r':
		ui.refreshPage()
	}
}

func (ui *watchUI) openRuntime() {
	m := ui.m
	m.page, m.tail, m.tailErr, m.history, m.histSel = pageRuntime, nil, "", nil, 0
	m.tailAt, m.fetchedAt = time.Time{}, time.Time{}
	ui.fetchDetail(m.sel)
}

// filterKey edits the / filter; the list follows as it is typed.
func (ui *watchUI) filterKey(ev *tcell.EventKey) {
	m := ui.m
	switch ev.Key() {
	case tcell.KeyEnter:
		m.filtering = false
	case tcell.KeyEscape:
		m.filtering, m.filter = false, ""
	case tcell.KeyBackspace, tcell.KeyBackspace2:
		if r := []rune(m.filter); len(r) > 0 {
			m.filter = string(r[:len(r)-1])
		}
	case tcell.KeyRune:
		if len(m.filter) < 64 {
			m.filter += string(ev.Rune())
		}
	}
	m.fixSel()
}

func (ui *watchUI) forceKey(ev *tcell.EventKey) {
	m := ui.m
	switch ev.Key() {
	case tcell.KeyEscape:
		m.forcing, m.forceReason, m.msg = "", nil, "force cancelled"
	case tcell.KeyEnter:
		id, reason := m.forcing, strings.TrimSpace(string(m.forceReason))
		if reason == "" {
			m.msg = "a reason is required"
			return
		}
		m.forcing, m.forceReason = "", nil
		ui.async(func(ctx context.Context) string {
			t, err := ui.c.Force(ctx, id, api.ForceRequest{Reason: reason, Intent: "human_override"})
			if err != nil {
				return "force " + id + ": " + err.Error()
			}
			return "forced " + id + ": " + apiReceiptWord(t)
		})
	case tcell.KeyBackspace, tcell.KeyBackspace2:
		if n := len(m.forceReason); n > 0 {
			m.forceReason = m.forceReason[:n-1]
		}
	case tcell.KeyRune:
		if len(m.forceReason) < 200 {
			m.forceReason = append(m.forceReason, ev.Rune())
		}
	}
}

func (ui *watchUI) togglePause() {
	rt, ok := ui.m.selected()
	if !ok {
		return
	}
	verb := "pause"
	if rt.Paused {
		verb = "resume"
	}
	ui.async(func(ctx context.Context) string {
		act := ui.c.Pause
		if verb == "resume" {
			act = ui.c.Resume
		}
		if _, err := act(ctx, rt.RuntimeID, "nudge watch"); err != nil {
			return verb + " " + rt.RuntimeID + ": " + err.Error()
		}
		return verb + "d " + rt.RuntimeID
	})
}

func (ui *watchUI) startForce(t api.Trigger) {
	if t.Closed {
		ui.m.msg = t.TriggerID + " is closed: nothing to force"
		return
	}
	ui.m.forcing, ui.m.forceReason, ui.m.msg = t.TriggerID, nil, ""
}
