package tui

import (
	"encoding/json"
	"sort"
	"strings"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/api"
	"github.com/nudgehq/nudge/cmd/nudge/view"
)

// page is which of the dashboard's pages is shown.
type page int

const (
	pageList    page = iota // every runtime, grouped by workspace
	pageRuntime             // one runtime: dialog, trigger timeline, readiness, screen
	pageTrigger             // one trigger: its stamps and its whole audit story
	pageTail                // one runtime's live screen on the whole terminal
)

// sortMode orders the runtimes within a workspace.
type sortMode int

const (
	sortName   sortMode = iota // by role
	sortState                  // the ones that need a person first
	sortRecent                 // the newest trigger first
	sortModes
)

func (s sortMode) String() string { return [...]string{"name", "state", "recent"}[s] }

// readinessChange is one readiness the stream reported for a runtime.
type readinessChange struct {
	at        time.Time
	readiness string
	summary   string
	busy      bool
}

// readinessKept is how many readiness changes a runtime keeps for its page.
const readinessKept = 16

// watchModel is the state `nudge watch` draws: the runtimes, each one's last trigger and
// deferred trigger, fed by one initial snapshot and then /v1/events, and what the open
// page shows. It is owned by the UI goroutine.
type watchModel struct {
	fleet     *view.Fleet // the runtimes, their newest and open triggers, their dialogs
	readiness map[string][]readinessChange
	alert     string // the latest alert's message

	connected bool
	syncedAt  time.Time // when the snapshot or the last event arrived
	sel       string    // selected runtime id
	top       int       // first list row shown (scrolling)

	filter    string // the / filter: runtimes whose words contain it
	filtering bool   // typing the filter
	sort      sortMode

	page page
	// runtime page
	tail      []string
	tailAt    time.Time // when the screen was captured
	tailErr   string    // the last capture's error (the screen shown is older)
	history   []api.Trigger
	histSel   int
	tailOff   int  // the tail page: lines scrolled back from the newest
	fetching  bool // a runtime page fetch is in flight
	fetchedAt time.Time
	// trigger page
	trig   api.Trigger
	audit  []api.AuditRecord
	scroll int

	// force-delivery prompt
	forcing     string // trigger id being forced ("" = no prompt)
	forceReason []rune
	// a line being typed: a : command, a trigger's prompt, a reason
	prompt *linePrompt
	// dialog answer prompt
	answering    *pendingAnswer
	answerReason []rune

	msg  string // one-line feedback at the bottom
	help bool   // the ? page is shown over the others
}

func newWatchModel() *watchModel {
	return &watchModel{fleet: view.NewFleet(), readiness: map[string][]readinessChange{}}
}

// watchSnapshot is the initial (and on-reconnect) state.
type watchSnapshot struct {
	runtimes []api.Runtime
	triggers []api.Trigger // open triggers and each runtime's newest ones
}

func (m *watchModel) applySnapshot(s watchSnapshot, now time.Time) {
	m.fleet.Reset(s.runtimes, s.triggers)
	for _, rt := range s.runtimes {
		if rt.Readiness != "" {
			m.noteReadiness(rt.RuntimeID, readinessChange{rt.UpdatedAt, string(rt.Readiness), rt.Summary, rt.OperatorBusy})
		}
	}
	m.connected, m.syncedAt = true, now
	m.fixSel()
}

// wireEvent is an Event as it arrives on the stream.
type wireEvent struct {
	Type    string          `json:"type"`
	Time    time.Time       `json:"time"`
	Runtime json.RawMessage `json:"runtime"`
	Trigger json.RawMessage `json:"trigger"`
	Detail  json.RawMessage `json:"detail"`
}

// applyEvent folds one stream event into the model. It reports the runtime a trigger or
// readiness event touched (so its page is worth refetching).
func (m *watchModel) applyEvent(ev wireEvent, now time.Time) (touched string) {
	m.syncedAt = now
	switch ev.Type {
	case "runtime":
		var rt api.Runtime
		if json.Unmarshal(ev.Runtime, &rt) != nil || rt.RuntimeID == "" {
			return ""
		}
		m.fleet.PutRuntime(rt)
		m.fixSel()
		return rt.RuntimeID
	case "readiness":
		var d struct {
			RuntimeID    string `json:"runtime_id"`
			Readiness    string `json:"readiness"`
			Summary      string `json:"summary"`
			OperatorBusy bool   `json:"operator_busy"`
		}
		if json.Unmarshal(ev.Detail, &d) == nil {
			m.fleet.SetReadiness(d.RuntimeID, nudge.Readiness(d.Readiness), d.Summary, d.OperatorBusy)
			at := ev.Time
			if at.IsZero() {
				at = now
			}
			m.noteReadiness(d.RuntimeID, readinessChange{at, d.Readiness, d.Summary, d.OperatorBusy})
			return d.RuntimeID
		}
	case "trigger":
		var t api.Trigger
		if json.Unmarshal(ev.Trigger, &t) == nil && t.TriggerID != "" {
			return m.applyTrigger(t)
		}
	case "alert":
		var a api.Alert
		if json.Unmarshal(ev.Detail, &a) == nil {
			m.alert = a.Message
		}
	}
	return ""
}

// noteReadiness keeps a readiness change for the runtime's page (newest last), skipping
// a repeat of the one before.
func (m *watchModel) noteReadiness(id string, c readinessChange) {
	h := m.readiness[id]
	if n := len(h); n > 0 && h[n-1].readiness == c.readiness && h[n-1].busy == c.busy && h[n-1].summary == c.summary {
		return
	}
	h = append(h, c)
	if len(h) > readinessKept {
		h = h[len(h)-readinessKept:]
	}
	m.readiness[id] = h
}

func (m *watchModel) triggerRuntime(t api.Trigger) string { return view.RuntimeOf(t) }

// applyTrigger takes a trigger's receipt; it returns the runtime it addresses.
func (m *watchModel) applyTrigger(t api.Trigger) string {
	if m.page == pageTrigger && m.trig.TriggerID == t.TriggerID {
		m.trig = t
	}
	return m.fleet.PutTrigger(t)
}

// setHistory keeps a runtime's triggers newest first, whatever order they came in.
func (m *watchModel) setHistory(ts []api.Trigger) {
	ts = append([]api.Trigger(nil), ts...)
	sort.SliceStable(ts, func(i, j int) bool { return ts[i].CreatedAt.After(ts[j].CreatedAt) })
	m.history = ts
	m.histSel = min(m.histSel, max(len(ts)-1, 0))
}

// depth is the runtime's open triggers as seen on the stream.
func (m *watchModel) depth(id string) int { return m.fleet.Queue(id) }

// dialog is the runtime's waiting dialog, nil when none.
func (m *watchModel) dialog(id string) *nudge.Dialog {
	rt, ok := m.fleet.Runtime(id)
	if !ok || rt.Dialog == nil || rt.Dialog.DialogID == "" {
		return nil
	}
	return rt.Dialog
}

// matches reports whether rt passes the / filter: every word of it is in the runtime's
// id, workspace, role, agent or state (case-insensitive).
func (m *watchModel) matches(rt api.Runtime) bool {
	if m.filter == "" {
		return true
	}
	hay := strings.ToLower(strings.Join([]string{rt.RuntimeID, rt.WorkspaceID, rt.Role, rt.Agent, apiStateWord(rt)}, " "))
	for _, w := range strings.Fields(strings.ToLower(m.filter)) {
		if !strings.Contains(hay, w) {
			return false
		}
	}
	return true
}

// order is the runtimes shown, in the order shown: by workspace, then by the sort mode.
func (m *watchModel) order() []api.Runtime {
	out := make([]api.Runtime, 0, m.fleet.Len())
	for _, rt := range m.fleet.Runtimes() {
		if m.matches(rt) {
			out = append(out, rt)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.WorkspaceID != b.WorkspaceID {
			return a.WorkspaceID < b.WorkspaceID
		}
		switch m.sort {
		case sortState:
			if ra, rb := view.NeedsPerson(apiStateWord(a)), view.NeedsPerson(apiStateWord(b)); ra != rb {
				return ra < rb
			}
		case sortRecent:
			la, _ := m.fleet.Last(a.RuntimeID)
			lb, _ := m.fleet.Last(b.RuntimeID)
			ta, tb := la.CreatedAt, lb.CreatedAt
			if !ta.Equal(tb) {
				return ta.After(tb)
			}
		}
		return a.Role < b.Role
	})
	return out
}

// listRow is one row of the list page: a workspace heading or a runtime.
type listRow struct {
	workspace string // a heading when rt is nil
	count     int    // runtimes under a heading
	rt        *api.Runtime
}

// rows is the list page: each workspace's heading, then its runtimes.
func (m *watchModel) rows() []listRow {
	var out []listRow
	o := m.order()
	for i := range o {
		if i == 0 || o[i].WorkspaceID != o[i-1].WorkspaceID {
			out = append(out, listRow{workspace: o[i].WorkspaceID})
		}
		out = append(out, listRow{rt: &o[i]})
	}
	head := -1
	for i, r := range out {
		if r.rt == nil {
			head = i
		} else {
			out[head].count++
		}
	}
	return out
}

func (m *watchModel) fixSel() {
	o := m.order()
	for _, rt := range o {
		if rt.RuntimeID == m.sel {
			return
		}
	}
	if _, ok := m.fleet.Runtime(m.sel); ok && m.page != pageList {
		return // a page stays on its runtime while the filter hides it
	}
	m.sel = ""
	if len(o) > 0 {
		m.sel = o[0].RuntimeID
	}
}

// move shifts the selection by delta runtimes.
func (m *watchModel) move(delta int) {
	o := m.order()
	if len(o) == 0 {
		return
	}
	i := 0
	for k, rt := range o {
		if rt.RuntimeID == m.sel {
			i = k
		}
	}
	i = min(max(i+delta, 0), len(o)-1)
	m.sel = o[i].RuntimeID
}

func (m *watchModel) selected() (api.Runtime, bool) {
	return m.fleet.Runtime(m.sel)
}

// selectedTrigger is the trigger selected on the runtime page.
func (m *watchModel) selectedTrigger() (api.Trigger, bool) {
	if m.histSel < 0 || m.histSel >= len(m.history) {
		return api.Trigger{}, false
	}
	return m.history[m.histSel], true
}
