package tui

import (
	"context"
	"strings"
	"time"

	"github.com/gdamore/tcell/v2"

	"github.com/nudgehq/nudge/cmd/nudge/api"
)

// key handles one key; it reports whether to quit. Esc goes back a page (on the list it
// clears the filter) and never quits; q quits from the list and goes back elsewhere;
// Ctrl-C quits from anywhere.
func (ui *watchUI) key(ev *tcell.EventKey) bool {
	m := ui.m
	switch {
	case m.help:
		m.help = false
		return false
	case m.prompt != nil:
		return ui.promptKey(ev)
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
	case ev.Key() == tcell.KeyEscape:
		ui.back()
		return false
	case ev.Key() == tcell.KeyRune && ev.Rune() == 'q':
		if m.page == pageList {
			return true
		}
		ui.back()
		return false
	case ev.Key() == tcell.KeyRune && ev.Rune() == ':':
		ui.startCommand()
		return false
	}
	if d := updown(ev); d != 0 {
		ui.step(d)
		return false
	}
	switch m.page {
	case pageList:
		ui.listKey(ev)
	case pageRuntime:
		ui.runtimeKey(ev)
	case pageTrigger:
		ui.triggerKey(ev)
	case pageTail:
		if ev.Key() == tcell.KeyRune {
			ui.actionKey(ev.Rune())
		}
	}
	return false
}

// back leaves the page; on the list it clears the filter (and the message line).
func (ui *watchUI) back() {
	m := ui.m
	switch m.page {
	case pageTrigger:
		m.page = pageRuntime
		ui.fetchDetail(m.sel)
	case pageRuntime, pageTail:
		m.page = pageList
		m.fixSel()
	default:
		m.filter, m.msg = "", ""
		m.fixSel()
	}
}

// far is a step past either end: g/G and Home/End go to the first or last row.
const far = 1 << 30

// updown maps ↑↓, j/k, the page keys, g/G and Home/End to a step.
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
	case tcell.KeyHome:
		return -far
	case tcell.KeyEnd:
		return far
	case tcell.KeyRune:
		switch ev.Rune() {
		case 'k':
			return -1
		case 'j':
			return 1
		case 'g':
			return -far
		case 'G':
			return far
		}
	}
	return 0
}

// step moves what the page lists by d rows (keys and the mouse wheel): the list's
// selection, a runtime's triggers, a trigger's audit, the tail (up is back in time).
func (ui *watchUI) step(d int) {
	m := ui.m
	switch m.page {
	case pageList:
		m.move(d)
	case pageRuntime:
		m.histSel = clamp(m.histSel+d, 0, len(m.history)-1)
	case pageTrigger:
		m.scroll = clamp(m.scroll+d, 0, len(m.audit)-1)
	case pageTail:
		m.tailOff = clamp(m.tailOff-d, 0, len(m.tail)-1)
	}
}

// clamp is v within [lo, hi] (lo when hi < lo), without overflowing at ±far.
func clamp(v, lo, hi int) int { return max(min(v, hi), lo) }

func (ui *watchUI) listKey(ev *tcell.EventKey) {
	m := ui.m
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
	if ev.Key() == tcell.KeyEnter {
		if t, ok := m.selectedTrigger(); ok {
			m.page, m.trig, m.audit, m.scroll = pageTrigger, t, nil, 0
			ui.fetchTrigger(t.TriggerID)
		}
		return
	}
	if ev.Key() == tcell.KeyRune {
		ui.actionKey(ev.Rune())
	}
}

func (ui *watchUI) triggerKey(ev *tcell.EventKey) {
	m := ui.m
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

// actionKey is a key that acts on the selected runtime, on the list and its pages.
func (ui *watchUI) actionKey(r rune) {
	m := ui.m
	switch r {
	case 'a', 's':
		ui.attach()
	case 'p':
		ui.togglePause()
	case 't':
		ui.startTrigger()
	case 'x':
		ui.startStop()
	case 'y':
		ui.startVerdict(true)
	case 'n':
		ui.startVerdict(false)
	case 'l':
		ui.openTail()
	case '1', '2', '3', '4', '5', '6', '7', '8', '9':
		ui.startAnswer(int(r - '0'))
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

// openTail shows the selected runtime's screen on the whole terminal, following it.
func (ui *watchUI) openTail() {
	m := ui.m
	if _, ok := m.selected(); !ok {
		return
	}
	if m.page != pageRuntime {
		m.tail, m.tailErr, m.tailAt = nil, "", time.Time{}
	}
	m.page, m.tailOff = pageTail, 0
	ui.fetchDetail(m.sel)
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
	if rt, ok := ui.m.selected(); ok {
		ui.setPaused(rt, !rt.Paused)
	}
}

// setPaused pauses (or resumes) rt's triggers.
func (ui *watchUI) setPaused(rt api.Runtime, pause bool) {
	verb := "resume"
	if pause {
		verb = "pause"
	}
	ui.async(func(ctx context.Context) string {
		act := ui.c.Resume
		if pause {
			act = ui.c.Pause
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
