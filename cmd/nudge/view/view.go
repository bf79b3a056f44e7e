// Package view is the one place that turns the daemon's state (runtimes, their triggers,
// their dialogs) into what a person reads: a runtime's state word, its badges, its queue,
// its last receipt and a summary of the dialog it waits on. `nudge watch` (package tui)
// draws its rows from it and the web view serves its cards (GET /api/v1/fleet), so the
// terminal and the browser never tell two stories.
//
// The main types:
//
//	Fleet    the runtimes and each one's newest and open triggers, fed by a snapshot
//	         (Reset) and then the event stream (PutRuntime, PutTrigger, SetReadiness)
//	Card     one runtime as shown: a row of the TUI's list, a card of the web fleet page
//	Receipt  a trigger in one line
//	Dialog   a waiting dialog in short
//
// A Fleet is not safe for concurrent use; its owner (the TUI's UI goroutine, one web
// request) holds it alone.
package view

import (
	"sort"
	"strings"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/api"
)

// StateWord is a runtime's state in one word: the lifecycle status when it says the agent
// cannot take prompts (PAUSED, FAILED, OFFLINE, EXITED, STARTING, ...), else the
// detector's readiness.
func StateWord(status nudge.Status, readiness nudge.Readiness, paused bool) string {
	switch status {
	case nudge.StatusFailed, nudge.StatusOffline, nudge.StatusStarting, nudge.StatusDeregistered,
		nudge.StatusFallbackResume, nudge.StatusSpawnRecovery, nudge.StatusExited:
		return strings.ToUpper(string(status))
	}
	if paused || status == nudge.StatusPaused {
		return "PAUSED"
	}
	if readiness == "" {
		return string(nudge.Unknown)
	}
	return string(readiness)
}

// ReceiptWord summarises a receipt: state, result, error code and fallback.
func ReceiptWord(state nudge.TriggerState, result nudge.Result, code nudge.Code, fallback string) string {
	s := string(state)
	if result != "" && string(result) != string(state) {
		s += "/" + string(result)
	}
	if code != "" {
		s += " " + string(code)
	}
	if fallback != "" {
		s += " (" + fallback + ")"
	}
	return s
}

// Badge words a card may carry, in this order.
const (
	BadgePaused = "paused"          // triggers held (nudge pause)
	BadgeHuman  = "operator typing" // a person at the pane's keyboard
	BadgeDialog = "dialog waits"    // the agent asks for an answer
)

// Card is one runtime as a person reads it. Its JSON is the web view's fleet card.
type Card struct {
	RuntimeID   string   `json:"runtime_id"`
	WorkspaceID string   `json:"workspace_id"`
	Role        string   `json:"role"`
	Agent       string   `json:"agent"`
	State       string   `json:"state"` // StateWord
	Status      string   `json:"status"`
	Readiness   string   `json:"readiness"`
	Summary     string   `json:"summary,omitempty"` // the detector's, ANSI stripped
	Paused      bool     `json:"paused,omitempty"`
	Busy        bool     `json:"operator_busy,omitempty"`
	Badges      []string `json:"badges"`
	Queue       int      `json:"queue"` // open triggers (queued, deferred, in flight)
	Last        *Receipt `json:"last,omitempty"`
	Dialog      *Dialog  `json:"dialog,omitempty"`
}

// Receipt is a trigger in one line.
type Receipt struct {
	TriggerID string    `json:"trigger_id"`
	State     string    `json:"state"`
	Word      string    `json:"word"` // ReceiptWord
	ErrorCode string    `json:"error_code,omitempty"`
	Text      string    `json:"text"` // its reply, else its prompt, cut to ReceiptText runes
	Closed    bool      `json:"closed,omitempty"`
	UpdatedAt time.Time `json:"updated_at"`
}

// ReceiptText is how many runes of a reply or prompt a Receipt keeps.
const ReceiptText = 200

// Dialog is a waiting dialog in short: enough to answer it from a list.
type Dialog struct {
	DialogID   string   `json:"dialog_id"`
	Title      string   `json:"title"`
	Command    string   `json:"command,omitempty"`
	Options    []Option `json:"options"`
	ApproveKey string   `json:"approve_key,omitempty"`
	DenyKey    string   `json:"deny_key,omitempty"`
}

// Option is one answer of a Dialog.
type Option struct {
	Key   string `json:"key"`
	Label string `json:"label"`
}

// CardOf is rt as a card, with its newest trigger (nil: none) and queue open triggers.
func CardOf(rt api.Runtime, last *api.Trigger, queue int) Card {
	c := Card{RuntimeID: rt.RuntimeID, WorkspaceID: rt.WorkspaceID, Role: rt.Role, Agent: rt.Agent,
		State: StateWord(rt.Status, rt.Readiness, rt.Paused), Status: string(rt.Status), Readiness: string(rt.Readiness),
		Summary: nudge.StripANSI(rt.Summary), Paused: rt.Paused, Busy: rt.OperatorBusy, Badges: []string{}, Queue: queue}
	if rt.Paused {
		c.Badges = append(c.Badges, BadgePaused)
	}
	if rt.OperatorBusy {
		c.Badges = append(c.Badges, BadgeHuman)
	}
	if d := rt.Dialog; d != nil && d.DialogID != "" {
		c.Badges = append(c.Badges, BadgeDialog)
		c.Dialog = &Dialog{DialogID: d.DialogID, Title: d.Title, Command: d.Command, ApproveKey: d.ApproveKey, DenyKey: d.DenyKey}
		for _, o := range d.Options {
			c.Dialog.Options = append(c.Dialog.Options, Option{o.Key, o.Label})
		}
	}
	if last != nil {
		r := ReceiptOf(*last)
		c.Last = &r
	}
	return c
}

// ReceiptOf is t in one line.
func ReceiptOf(t api.Trigger) Receipt {
	text := t.Reply
	if text == "" {
		text = t.Prompt
	}
	if r := []rune(text); len(r) > ReceiptText {
		text = string(r[:ReceiptText-1]) + "…"
	}
	return Receipt{TriggerID: t.TriggerID, State: string(t.State), Word: ReceiptWord(t.State, t.Result, t.ErrorCode, t.Fallback),
		ErrorCode: string(t.ErrorCode), Text: text, Closed: t.Closed, UpdatedAt: t.UpdatedAt}
}

// Fleet is the runtimes a viewer may see and what it knows of their triggers.
type Fleet struct {
	rts      map[string]api.Runtime
	last     map[string]api.Trigger     // newest trigger per runtime
	deferred map[string]string          // runtime -> an open deferred trigger id
	open     map[string]map[string]bool // runtime -> its open triggers
}

// NewFleet is an empty fleet.
func NewFleet() *Fleet {
	f := &Fleet{}
	f.Reset(nil, nil)
	return f
}

// Reset replaces everything with a snapshot: the runtimes, and triggers (open ones and
// each runtime's newest, in any order).
func (f *Fleet) Reset(rts []api.Runtime, ts []api.Trigger) {
	f.rts, f.last, f.deferred, f.open = map[string]api.Runtime{}, map[string]api.Trigger{}, map[string]string{}, map[string]map[string]bool{}
	for _, rt := range rts {
		f.rts[rt.RuntimeID] = rt
	}
	for _, t := range ts {
		f.PutTrigger(t)
	}
}

// PutRuntime takes a runtime's new record; a deregistered one leaves the fleet. The
// record of an event has no queue depth: the one known is kept.
func (f *Fleet) PutRuntime(rt api.Runtime) {
	if rt.Status == nudge.StatusDeregistered {
		delete(f.rts, rt.RuntimeID)
		return
	}
	if rt.QueueDepth == 0 {
		rt.QueueDepth = f.rts[rt.RuntimeID].QueueDepth
	}
	f.rts[rt.RuntimeID] = rt
}

// SetReadiness takes a readiness event; it reports whether the runtime is known.
func (f *Fleet) SetReadiness(id string, r nudge.Readiness, summary string, busy bool) bool {
	rt, ok := f.rts[id]
	if ok {
		rt.Readiness, rt.Summary, rt.OperatorBusy = r, summary, busy
		f.rts[id] = rt
	}
	return ok
}

// RuntimeOf is the runtime a trigger addresses.
func RuntimeOf(t api.Trigger) string {
	if t.RuntimeID != "" {
		return t.RuntimeID
	}
	return nudge.RuntimeID(t.WorkspaceID, t.Agent)
}

// PutTrigger takes a trigger's receipt and returns the runtime it addresses.
func (f *Fleet) PutTrigger(t api.Trigger) string {
	id := RuntimeOf(t)
	if prev, ok := f.last[id]; !ok || !t.CreatedAt.Before(prev.CreatedAt) || prev.TriggerID == t.TriggerID {
		f.last[id] = t
	}
	if t.State == nudge.StateDeferred && !t.Closed {
		f.deferred[id] = t.TriggerID
	} else if f.deferred[id] == t.TriggerID {
		delete(f.deferred, id)
	}
	if f.open[id] == nil {
		f.open[id] = map[string]bool{}
	}
	if t.Closed {
		delete(f.open[id], t.TriggerID)
	} else {
		f.open[id][t.TriggerID] = true
	}
	return id
}

// Len is how many runtimes the fleet holds.
func (f *Fleet) Len() int { return len(f.rts) }

// Runtime is a runtime's record.
func (f *Fleet) Runtime(id string) (api.Runtime, bool) {
	rt, ok := f.rts[id]
	return rt, ok
}

// Runtimes is every runtime, in no order.
func (f *Fleet) Runtimes() []api.Runtime {
	out := make([]api.Runtime, 0, len(f.rts))
	for _, rt := range f.rts {
		out = append(out, rt)
	}
	return out
}

// Last is a runtime's newest trigger.
func (f *Fleet) Last(id string) (api.Trigger, bool) {
	t, ok := f.last[id]
	return t, ok
}

// Deferred is a runtime's open deferred trigger ("" none).
func (f *Fleet) Deferred(id string) string { return f.deferred[id] }

// Queue is a runtime's open triggers.
func (f *Fleet) Queue(id string) int { return len(f.open[id]) }

// Card is a runtime's card (false: no such runtime).
func (f *Fleet) Card(id string) (Card, bool) {
	rt, ok := f.rts[id]
	if !ok {
		return Card{}, false
	}
	var last *api.Trigger
	if t, ok := f.last[id]; ok {
		last = &t
	}
	return CardOf(rt, last, f.Queue(id)), true
}

// Cards is every runtime's card, by workspace then role.
func (f *Fleet) Cards() []Card {
	out := make([]Card, 0, len(f.rts))
	for id := range f.rts {
		c, _ := f.Card(id)
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].WorkspaceID != out[j].WorkspaceID {
			return out[i].WorkspaceID < out[j].WorkspaceID
		}
		return out[i].Role < out[j].Role
	})
	return out
}

// NeedsPerson ranks a state word: what needs a person first (0), then errors, ready,
// busy, paused, the rest.
func NeedsPerson(word string) int {
	switch word {
	case string(nudge.NeedsConfirmation):
		return 0
	case string(nudge.ErrorState), "FAILED":
		return 1
	case string(nudge.Ready):
		return 2
	case string(nudge.Busy):
		return 3
	case "PAUSED":
		return 4
	}
	return 5
}
