package tui

import (
	"encoding/json"
	"sort"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/api"
	"github.com/nudgehq/nudge/cmd/nudge/observe"
	"github.com/nudgehq/nudge/panes"
)

// watchModel is the state `nudge watch` draws: the runtimes, each one's last trigger and
// deferred trigger, fed by one initial snapshot and then /v1/events. It is owned by the
// UI goroutine.
type watchModel struct {
	rts      map[string]api.Runtime
	last     map[string]api.Trigger     // newest trigger per runtime
	deferred map[string]string          // runtime -> an open deferred trigger id
	open     map[string]map[string]bool // runtime -> its open (queued, in flight) triggers
	alert    string                     // the latest alert's message

	connected bool
	sel       string // selected runtime id

	// detail view
	detail  bool
	tail    []string
	history []api.Trigger

	// force-delivery prompt
	forcing     string // trigger id being forced ("" = no prompt)
	forceReason []rune

	msg string // one-line feedback at the bottom
}

func newWatchModel() *watchModel {
	return &watchModel{rts: map[string]api.Runtime{}, last: map[string]api.Trigger{}, deferred: map[string]string{},
		open: map[string]map[string]bool{}}
}

// watchSnapshot is the initial (and on-reconnect) state.
type watchSnapshot struct {
	runtimes []api.Runtime
	triggers []api.Trigger // open triggers and each runtime's newest ones
}

func (m *watchModel) applySnapshot(s watchSnapshot) {
	m.rts = map[string]api.Runtime{}
	m.last = map[string]api.Trigger{}
	m.deferred = map[string]string{}
	m.open = map[string]map[string]bool{}
	for _, rt := range s.runtimes {
		m.rts[rt.RuntimeID] = rt
	}
	for _, t := range s.triggers {
		m.applyTrigger(t)
	}
	m.connected = true
	m.fixSel()
}

// wireEvent is an Event as it arrives on the stream.
type wireEvent struct {
	Type    string          `json:"type"`
	Runtime json.RawMessage `json:"runtime"`
	Trigger json.RawMessage `json:"trigger"`
	Detail  json.RawMessage `json:"detail"`
}

// applyEvent folds one stream event into the model. It reports whether the detail view's
// runtime was touched by a trigger (so its history is worth refetching).
func (m *watchModel) applyEvent(ev wireEvent) (touched string) {
	switch ev.Type {
	case "runtime":
		var rt api.Runtime
		if json.Unmarshal(ev.Runtime, &rt) != nil || rt.RuntimeID == "" {
			return ""
		}
		if rt.Status == nudge.StatusDeregistered {
			delete(m.rts, rt.RuntimeID)
		} else {
			rt.QueueDepth = m.rts[rt.RuntimeID].QueueDepth // the event's record has no queue
			m.rts[rt.RuntimeID] = rt
		}
		m.fixSel()
	case "readiness":
		var d struct {
			RuntimeID    string `json:"runtime_id"`
			Readiness    string `json:"readiness"`
			Summary      string `json:"summary"`
			OperatorBusy bool   `json:"operator_busy"`
		}
		if json.Unmarshal(ev.Detail, &d) == nil {
			if rt, ok := m.rts[d.RuntimeID]; ok {
				rt.Readiness, rt.Summary, rt.OperatorBusy = nudge.Readiness(d.Readiness), d.Summary, d.OperatorBusy
				m.rts[d.RuntimeID] = rt
			}
		}
	case "trigger":
		var t api.Trigger
		if json.Unmarshal(ev.Trigger, &t) == nil && t.TriggerID != "" {
			m.applyTrigger(t)
			return t.RuntimeID
		}
	case "alert":
		var a observe.Alert
		if json.Unmarshal(ev.Detail, &a) == nil {
			m.alert = a.Message
		}
	}
	return ""
}

func (m *watchModel) applyTrigger(t api.Trigger) {
	id := t.RuntimeID
	if id == "" {
		id = panes.RuntimeID(t.WorkspaceID, t.Agent)
	}
	if prev, ok := m.last[id]; !ok || !t.CreatedAt.Before(prev.CreatedAt) || prev.TriggerID == t.TriggerID {
		m.last[id] = t
	}
	if t.State == nudge.StateDeferred && !t.Closed {
		m.deferred[id] = t.TriggerID
	} else if m.deferred[id] == t.TriggerID {
		delete(m.deferred, id)
	}
	if m.open[id] == nil {
		m.open[id] = map[string]bool{}
	}
	if t.Closed {
		delete(m.open[id], t.TriggerID)
	} else {
		m.open[id][t.TriggerID] = true
	}
}

// depth is the runtime's open triggers as seen on the stream.
func (m *watchModel) depth(id string) int { return len(m.open[id]) }

// order is the runtimes sorted as shown.
func (m *watchModel) order() []api.Runtime {
	out := make([]api.Runtime, 0, len(m.rts))
	for _, rt := range m.rts {
		out = append(out, rt)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].WorkspaceID != out[j].WorkspaceID {
			return out[i].WorkspaceID < out[j].WorkspaceID
		}
		return out[i].Role < out[j].Role
	})
	return out
}

func (m *watchModel) fixSel() {
	if _, ok := m.rts[m.sel]; ok {
		return
	}
	m.sel = ""
	if o := m.order(); len(o) > 0 {
		m.sel = o[0].RuntimeID
	}
}

// move shifts the selection by delta rows.
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
	rt, ok := m.rts[m.sel]
	return rt, ok
}
