package tui

import "github.com/gdamore/tcell/v2"

// mouse handles a mouse event: a click (a press of the first button) selects the row
// under it and a second click on the selected row opens it; the wheel scrolls what the
// page lists, as ↑↓ do.
func (ui *watchUI) mouse(ev *tcell.EventMouse) {
	b := ev.Buttons()
	pressed := b&tcell.Button1 != 0 && ui.mouseB&tcell.Button1 == 0
	ui.mouseB = b
	m := ui.m
	switch {
	case b&tcell.WheelUp != 0:
		ui.step(-1)
	case b&tcell.WheelDown != 0:
		ui.step(1)
	case !pressed:
	case m.help:
		m.help = false
	case m.prompt != nil || m.forcing != "" || m.answering != nil:
		// a line is being typed: the mouse does not take the dashboard away from it
	default:
		_, y := ev.Position()
		ui.click(y)
	}
}

// click selects (or, when already selected, opens) the row at y.
func (ui *watchUI) click(y int) {
	m := ui.m
	switch m.page {
	case pageList:
		id, ok := ui.view.rows[y]
		if !ok {
			return
		}
		if id == m.sel {
			ui.openRuntime()
			return
		}
		m.sel = id
	case pageRuntime:
		i, ok := ui.view.hist[y]
		if !ok {
			return
		}
		if i == m.histSel {
			ui.key(tcell.NewEventKey(tcell.KeyEnter, 0, tcell.ModNone))
			return
		}
		m.histSel = i
	}
}
