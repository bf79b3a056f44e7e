package tui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/gdamore/tcell/v2"
	"github.com/rivo/uniseg"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/api"
)

// watchView draws the model on the screen. Every string is cut to the screen width in
// cells (wide characters take two, as tcell and the terminal draw them); nothing wraps.
type watchView struct {
	s tcell.Screen
	m *watchModel
	// What the last draw put where, for the mouse: the list's runtime rows and the
	// runtime page's trigger rows (y -> runtime id, y -> index in history).
	rows map[int]string
	hist map[int]int
}

var (
	stDefault = tcell.StyleDefault
	stHeader  = tcell.StyleDefault.Bold(true)
	stSel     = tcell.StyleDefault.Reverse(true)
	stDim     = tcell.StyleDefault.Foreground(tcell.ColorGray)
	stWarn    = tcell.StyleDefault.Foreground(tcell.ColorRed)
)

// stateStyle colours a state word: READY green, BUSY yellow, NEEDS_CONFIRMATION magenta,
// ERROR/FAILED red, OFFLINE/EXITED grey, PAUSED blue.
func stateStyle(word string) tcell.Style {
	switch word {
	case string(nudge.Ready):
		return stDefault.Foreground(tcell.ColorGreen)
	case string(nudge.Busy):
		return stDefault.Foreground(tcell.ColorYellow)
	case string(nudge.NeedsConfirmation):
		return stDefault.Foreground(tcell.ColorFuchsia).Bold(true)
	case string(nudge.ErrorState), "FAILED":
		return stWarn
	case "OFFLINE", "DEREGISTERED", "EXITED":
		return stDim
	case "PAUSED":
		return stDefault.Foreground(tcell.ColorBlue)
	default:
		return stDefault
	}
}

// put writes s at (x, y) grapheme by grapheme, cut at the screen's right edge, and
// returns the next x.
func (v *watchView) put(x, y int, s string, st tcell.Style) int {
	w, _ := v.s.Size()
	g := uniseg.NewGraphemes(s)
	for g.Next() {
		str, gw := g.Str(), g.Width()
		if r := g.Runes(); len(r) == 1 && (r[0] < ' ' || r[0] == 0x7f) {
			str, gw = " ", 1
		}
		if gw == 0 {
			continue
		}
		if x+gw > w {
			break
		}
		v.s.Put(x, y, str, st)
		x += gw
	}
	return x
}

// fill pads row y from x to the right edge with style st.
func (v *watchView) fill(x, y int, st tcell.Style) {
	w, _ := v.s.Size()
	for ; x < w; x++ {
		v.s.Put(x, y, " ", st)
	}
}

func (v *watchView) draw() {
	s, m := v.s, v.m
	s.Clear()
	v.rows, v.hist = map[int]string{}, map[int]int{}
	w, h := s.Size()
	now := time.Now()
	v.drawTitle(w, now)
	switch {
	case m.help:
		v.drawHelp()
	case m.page == pageRuntime:
		v.drawRuntime(w, h, now)
	case m.page == pageTrigger:
		v.drawTrigger(w, h)
	case m.page == pageTail:
		v.drawTail(h, now)
	default:
		v.drawList(w, h, now)
	}
	v.drawBottom(h)
	s.Show()
}

func (v *watchView) drawTitle(w int, now time.Time) {
	m := v.m
	x := v.put(0, 0, fmt.Sprintf("nudge watch  %d runtimes  ", m.fleet.Len()), stHeader)
	if m.connected {
		x = v.put(x, 0, "[live]", stDefault.Foreground(tcell.ColorGreen))
	} else if m.syncedAt.IsZero() {
		x = v.put(x, 0, "[connecting]", stWarn)
	} else {
		x = v.put(x, 0, "[stale since "+m.syncedAt.Format("15:04:05")+"]", stWarn)
	}
	x = v.put(x, 0, "  sort:"+m.sort.String(), stDim)
	if m.filter != "" || m.filtering {
		x = v.put(x, 0, "  /"+m.filter, stHeader)
	}
	clock := now.Format("15:04:05")
	if x+2+len(clock) <= w {
		v.put(w-len(clock), 0, clock, stDim)
	}
}

// helpText is the ? page.
var helpText = []string{
	"Keys (any key closes this page)",
	"",
	"  ↑ ↓  j k  PgUp PgDn   move: runtimes, a runtime's triggers, a trigger's audit, the tail",
	"  g G  Home End         the first, the last",
	"  mouse                 click selects (a second click opens), the wheel scrolls",
	"  Enter                 open: a runtime's page, then a trigger's page",
	"  Esc                   back a page (on the list: clear the filter); never quits",
	"  q                     back a page; on the list: quit (Ctrl-C quits anywhere)",
	"  :                     a command: q, trigger TEXT, pause, resume, stop REASON,",
	"                        approve|deny REASON, answer N REASON, tail, attach, open ID,",
	"                        filter WORDS, sort name|state|recent, refresh",
	"  /                     filter the list: words matched against id, workspace, role,",
	"                        agent and state; Enter keeps it, Esc clears it",
	"  o                     sort within each workspace: name, state, the newest trigger",
	"  l                     the runtime's live screen on the whole terminal (its tail)",
	"  t                     send the runtime a trigger (asks for the prompt)",
	"  p                     pause or resume the runtime's triggers",
	"  x                     stop the runtime (asks for a reason)",
	"  y  n  1-9             answer its dialog: approve, deny, or that option (asks why)",
	"  a  s                  attach your terminal to the runtime's pane, on whichever",
	"                        tmux server (or ssh host) it lives; detach to come back",
	"  f                     force-deliver its deferred trigger (asks for a reason)",
	"  r                     refresh the page now",
	"",
	"States: READY green, BUSY yellow, NEEDS_CONFIRMATION magenta, ERROR/FAILED red,",
	"PAUSED blue, OFFLINE/EXITED grey; +human: a person is typing in the pane.",
}

func (v *watchView) drawHelp() {
	for i, l := range helpText {
		v.put(0, 1+i, l, orStyle(i == 0, stHeader, stDefault))
	}
}

// pageKeys is the keys line of each page.
var pageKeys = map[page]string{
	pageList:    "↑↓ select ⏎ open l tail t trigger p pause x stop a attach / : ? help q quit",
	pageRuntime: "↑↓ trigger ⏎ its story l tail t trigger p pause x stop a attach ? help q back",
	pageTrigger: "↑↓ scroll f force a attach r refresh : cmd ? help q back",
	pageTail:    "↑↓ scroll G follow t trigger p pause a attach : cmd ? help q back",
}

func (v *watchView) drawBottom(h int) {
	m := v.m
	switch {
	case m.prompt != nil:
		v.put(0, h-2, m.prompt.label+string(m.prompt.text)+"_", stHeader)
	case m.forcing != "":
		v.put(0, h-2, "force "+m.forcing+" - reason: "+string(m.forceReason)+"_", stHeader)
	case m.answering != nil:
		v.put(0, h-2, "answer "+m.answering.option.Label+" - reason: "+string(m.answerReason)+"_", stHeader)
	case m.filtering:
		v.put(0, h-2, "filter: "+m.filter+"_", stHeader)
	case m.msg != "":
		v.put(0, h-2, m.msg, stDefault)
	case m.alert != "":
		v.put(0, h-2, "ALERT: "+m.alert, stWarn)
	}
	keys := pageKeys[m.page]
	switch {
	case m.prompt != nil:
		keys = orDefault(m.prompt.hint, "⏎ done  Esc cancel")
	case m.page != pageTrigger && m.dialog(m.sel) != nil && m.answering == nil && m.forcing == "":
		keys = "y approve n deny 1-9 answer (asks why) ⏎ open l tail a attach ? help " + orWord(m.page == pageList, "q quit", "q back")
	case m.forcing != "":
		keys = "type a reason  ⏎ force-deliver  Esc cancel"
	case m.answering != nil:
		keys = "type a reason  ⏎ answer the dialog  Esc cancel"
	case m.filtering:
		keys = "type words to keep (id, workspace, role, agent, state)  ⏎ done  Esc clear"
	}
	v.put(0, h-1, keys, stDim)
}

// column widths for the list, shrunk to fit narrow terminals.
func watchColumns(w int) (id, state, q int) {
	id, state, q = 24, 22, 3
	if w < 100 {
		id, state = 20, 20
	}
	return
}

func (v *watchView) drawList(w, h int, now time.Time) {
	m := v.m
	cid, cst, cq := watchColumns(w)
	v.put(0, 1, "  "+pad("RUNTIME", cid)+" "+pad("STATE", cst)+" "+pad("Q", cq)+" LAST RECEIPT", stHeader)
	rows := m.rows()
	room := h - 4 // title, column heads, message, keys
	if room < 1 {
		return
	}
	selAt := 0
	for i, r := range rows {
		if r.rt != nil && r.rt.RuntimeID == m.sel {
			selAt = i
		}
	}
	m.top = min(max(m.top, selAt-room+1), selAt)
	if selAt > 0 && rows[selAt-1].rt == nil {
		m.top = min(m.top, selAt-1) // keep the workspace heading in view
	}
	m.top = max(0, min(m.top, len(rows)-room))
	y := 2
	for _, r := range rows[m.top:] {
		if y >= h-2 {
			break
		}
		if r.rt == nil {
			x := v.put(0, y, "▾ "+r.workspace, stHeader)
			v.put(x, y, fmt.Sprintf("  %d runtime(s)", r.count), stDim)
		} else {
			v.drawListRow(*r.rt, y, cid, cst, cq, now)
		}
		y++
	}
	switch {
	case m.fleet.Len() == 0 && m.connected:
		v.put(2, y, "no runtimes (nudge spawn ...)", stDim)
	case len(rows) == 0 && m.filter != "":
		v.put(2, y, "nothing matches /"+m.filter+" (Esc clears)", stDim)
	}
}

func (v *watchView) drawListRow(rt api.Runtime, y, cid, cst, cq int, now time.Time) {
	m := v.m
	c, _ := m.fleet.Card(rt.RuntimeID)
	st, mark := stDefault, "  "
	if rt.RuntimeID == m.sel {
		st, mark = stSel, "> "
	}
	x := v.put(0, y, mark+pad(rt.RuntimeID, cid)+" ", st)
	state := c.State
	if c.Busy {
		state += " +human"
	}
	x = v.put(x, y, pad(state, cst), stateStyle(c.State))
	receipt := "-"
	if c.Last != nil {
		receipt = c.Last.TriggerID + " " + c.Last.Word + " " + Ago(c.Last.UpdatedAt, now)
	}
	if c.Dialog != nil {
		receipt = "asks: " + c.Dialog.Title
	}
	x = v.put(x, y, " "+pad(fmt.Sprint(c.Queue), cq)+" "+receipt, st)
	if rt.RuntimeID == m.sel {
		v.fill(x, y, st)
	}
	v.rows[y] = rt.RuntimeID
}

func (v *watchView) drawRuntime(w, h int, now time.Time) {
	m := v.m
	rt, ok := m.selected()
	if !ok {
		v.put(0, 1, "runtime gone (q: back)", stDim)
		return
	}
	word := apiStateWord(rt)
	x := v.put(0, 1, rt.RuntimeID+"  "+rt.Agent+"  "+orDash(rt.PaneID)+"  ", stHeader)
	x = v.put(x, 1, word, stateStyle(word))
	extra := "  status " + string(rt.Status)
	if rt.OperatorBusy {
		extra += "  human typing"
	}
	if rt.Paused {
		extra += "  triggers paused"
	}
	v.put(x, 1, extra+"  "+nudge.StripANSI(rt.Summary), stDefault)
	y := 2
	if d := m.dialog(rt.RuntimeID); d != nil {
		y = v.drawDialog(d, y, w)
	}
	avail := h - 2 - y // rows above the message line
	y = v.drawTimeline(y, max(2, avail/3), now)
	y = v.drawReadiness(rt.RuntimeID, y, 3)
	v.drawScreen(y, h-2, now)
}

// drawTimeline lists the runtime's triggers newest first, each with its timeline, at most
// n; it returns the next row.
func (v *watchView) drawTimeline(y, n int, now time.Time) int {
	m := v.m
	head := "Triggers (newest first)"
	if !m.fetchedAt.IsZero() && now.Sub(m.fetchedAt) > 3*screenEvery {
		head += "  stale since " + m.fetchedAt.Format("15:04:05")
	}
	v.put(0, y, head, stHeader)
	y++
	if len(m.history) == 0 {
		v.put(2, y, orWord(m.fetchedAt.IsZero(), "loading…", "none"), stDim)
		return y + 1
	}
	first := 0
	if m.histSel >= n {
		first = m.histSel - n + 1
	}
	for i := first; i < len(m.history) && i < first+n; i++ {
		t := m.history[i]
		st, mark := stDefault, "  "
		if i == m.histSel {
			st, mark = stSel, "> "
		}
		x := v.put(0, y, mark+pad(t.TriggerID, 12)+" ", st)
		v.put(x, y, compactTimeline(t), st)
		v.hist[y] = i
		y++
	}
	return y
}

// drawReadiness shows the runtime's newest readiness changes seen since the dashboard
// started, at most n; it returns the next row.
func (v *watchView) drawReadiness(id string, y, n int) int {
	v.put(0, y, "Readiness (newest first)", stHeader)
	y++
	h := v.m.readiness[id]
	if len(h) == 0 {
		v.put(2, y, "none known", stDim)
		return y + 1
	}
	for i := len(h) - 1; i >= 0 && i >= len(h)-n; i-- {
		c := h[i]
		x := v.put(2, y, c.at.Format("15:04:05")+"  ", stDefault)
		x = v.put(x, y, pad(c.readiness, 19), stateStyle(c.readiness))
		note := nudge.StripANSI(c.summary)
		if c.busy {
			note = "human typing  " + note
		}
		v.put(x, y, " "+note, stDim)
		y++
	}
	return y
}

// drawTail is the tail page: the runtime's screen on every row, newest at the bottom,
// m.tailOff lines scrolled back.
func (v *watchView) drawTail(h int, now time.Time) {
	m := v.m
	rt, ok := m.selected()
	if !ok {
		v.put(0, 1, "runtime gone (Esc: back)", stDim)
		return
	}
	word := apiStateWord(rt)
	x := v.put(0, 1, rt.RuntimeID+"  ", stHeader)
	x = v.put(x, 1, word, stateStyle(word))
	if m.tailOff > 0 {
		v.put(x, 1, fmt.Sprintf("  %d lines back (G: follow)", m.tailOff), stDim)
	}
	head, st := screenHead(m)
	v.put(0, 2, head, st)
	lines := trimBlank(m.tail)
	v.drawLines(3, h-2, lines[:max(len(lines)-m.tailOff, 0)])
}

// drawScreen shows the newest lines of the runtime's screen between rows y and end.
func (v *watchView) drawScreen(y, end int, _ time.Time) {
	head, st := screenHead(v.m)
	v.put(0, y, head, st)
	v.drawLines(y+1, end, trimBlank(v.m.tail))
}

// screenHead is the heading over a runtime's screen: when it was captured, or why it is
// stale.
func screenHead(m *watchModel) (string, tcell.Style) {
	head := "Screen"
	switch {
	case m.tailAt.IsZero() && m.tailErr == "":
		head += " (loading…)"
	case m.tailErr != "":
		head += " (stale"
		if !m.tailAt.IsZero() {
			head += " since " + m.tailAt.Format("15:04:05")
		}
		return head + ": " + m.tailErr + ")", stWarn
	default:
		head += " (live, " + m.tailAt.Format("15:04:05") + ")"
	}
	return head, stHeader
}

// trimBlank is lines without the blank ones at the end.
func trimBlank(lines []string) []string {
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// drawLines shows the last of lines that fit between rows y and end.
func (v *watchView) drawLines(y, end int, lines []string) {
	if room := end - y; len(lines) > room {
		lines = lines[len(lines)-max(room, 0):]
	}
	for _, l := range lines {
		v.put(2, y, strings.ReplaceAll(l, "\t", "    "), stDefault)
		y++
	}
}

func (v *watchView) drawTrigger(w, h int) {
	m := v.m
	t := m.trig
	word := apiReceiptWord(t)
	x := v.put(0, 1, "trigger "+t.TriggerID+"  → "+orDash(m.triggerRuntime(t))+"  ", stHeader)
	v.put(x, 1, word, receiptStyle(t))
	who := "thread " + orDash(t.ThreadID) + "  caller " + orDash(t.Caller) + fmt.Sprintf("  attempts %d", t.Attempts)
	if t.DeliveryBackend != "" {
		who += "  backend " + t.DeliveryBackend
	}
	if t.AckSignal != "" {
		who += "  ack " + t.AckSignal
	}
	v.put(0, 2, who, stDefault)
	v.put(0, 3, "prompt: "+strings.ReplaceAll(t.Prompt, "\n", " ⏎ "), stDim)
	y := 4
	if t.Message != "" {
		v.put(0, y, t.Message, stWarn)
		y++
	}
	v.put(0, y, "Timeline", stHeader)
	y++
	for _, s := range timeline(t) {
		v.put(2, y, pad(s.name, 10)+" "+s.at.Format("15:04:05.000")+"  "+s.note, stDefault)
		y++
	}
	v.put(0, y, fmt.Sprintf("Audit (%d records, oldest first)", len(m.audit)), stHeader)
	y++
	for i := m.scroll; i < len(m.audit) && y < h-2; i++ {
		a := m.audit[i]
		line := a.Time.Format("15:04:05.000") + "  " + a.Event
		if a.Code != "" {
			line += "  " + string(a.Code)
		}
		if a.Subject != "" {
			line += "  by " + a.Subject
		}
		if a.Reason != "" {
			line += "  \"" + a.Reason + "\""
		}
		var detail bytes.Buffer
		if len(a.Detail) > 0 && json.Compact(&detail, a.Detail) == nil && detail.String() != "null" {
			line += "  " + detail.String()
		}
		for k, part := range wrap(line, w-2, w-16) {
			if y >= h-2 {
				break
			}
			v.put(2+14*min(k, 1), y, part, orStyle(k == 0, stDefault, stDim))
			y++
		}
	}
}

// wrap cuts s into lines of at most first cells, then rest cells (graphemes kept whole).
func wrap(s string, first, rest int) []string {
	var out []string
	var b strings.Builder
	n, limit := 0, max(first, 1)
	g := uniseg.NewGraphemes(s)
	for g.Next() {
		if gw := g.Width(); n+gw > limit && n > 0 {
			out = append(out, b.String())
			b.Reset()
			n, limit = 0, max(rest, 1)
		}
		b.WriteString(g.Str())
		n += g.Width()
	}
	return append(out, b.String())
}

func orStyle(c bool, yes, no tcell.Style) tcell.Style {
	if c {
		return yes
	}
	return no
}

// receiptStyle colours a receipt: acked green, failed red, open yellow.
func receiptStyle(t api.Trigger) tcell.Style {
	switch {
	case t.State == nudge.StateFailed:
		return stWarn
	case t.State == nudge.StateAcked:
		return stDefault.Foreground(tcell.ColorGreen)
	case !t.Closed:
		return stDefault.Foreground(tcell.ColorYellow)
	}
	return stDefault
}

// stamp is one step of a trigger's timeline.
type stamp struct {
	name string
	at   time.Time
	note string
}

// timeline is a trigger's steps with their times, in the order of the receipt states:
// queued → deferred (why, until when) → injected → submitted → acked, or failed.
func timeline(t api.Trigger) []stamp {
	q := t.QueuedAt
	if q.IsZero() {
		q = t.CreatedAt
	}
	out := []stamp{{"queued", q, ""}}
	add := func(name string, at *time.Time, note string) {
		if at != nil && !at.IsZero() {
			out = append(out, stamp{name, *at, note})
		}
	}
	deferNote := ""
	if t.State == nudge.StateDeferred && t.ErrorCode != "" {
		deferNote = string(t.ErrorCode) + " "
	}
	if t.DeferredUntil != nil {
		deferNote += "until " + t.DeferredUntil.Format("15:04:05")
	}
	add("deferred", t.DeferredAt, deferNote)
	add("injected", t.InjectedAt, "")
	add("submitted", t.SubmittedAt, "")
	add("acked", t.AckedAt, t.AckSignal)
	add("failed", t.FailedAt, string(t.ErrorCode))
	return out
}

// compactTimeline is the timeline on one line: the first time, then each step's offset.
func compactTimeline(t api.Trigger) string {
	ss := timeline(t)
	var b strings.Builder
	for i, s := range ss {
		if i == 0 {
			b.WriteString(s.at.Format("15:04:05") + " " + s.name)
		} else {
			b.WriteString(" → " + s.name + " +" + offset(s.at.Sub(ss[0].at)))
		}
		if s.note != "" {
			b.WriteString(" (" + s.note + ")")
		}
	}
	return b.String()
}

// offset is a short duration: 0.3s, 12s, 4m.
func offset(d time.Duration) string {
	switch {
	case d < 10*time.Second:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < 2*time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < 2*time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	}
	return fmt.Sprintf("%dh", int(d.Hours()))
}

func orWord(c bool, yes, no string) string {
	if c {
		return yes
	}
	return no
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
