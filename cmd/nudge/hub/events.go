package hub

import (
	"encoding/json"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/nudgehq/nudge"
	eventstream "github.com/nudgehq/nudge/cmd/nudge/events"
)

// The fleet's events: every host puts its own events on nudge.ev.HOST, and every host
// (the hub too) takes the others' into its own event stream with host set, so `nudge
// events` and /v1/events on any member show the fleet, filtered by the caller's token as
// any event. Each host keeps what it took in its own store: the hub has the fleet's.

func evSubject(host string) string { return "nudge.ev." + host }

const evAll = "nudge.ev.*"

// relayBacklog bounds the events waiting to go to the hub (a link down): past it the
// newest are dropped and counted, never blocking the daemon's stream.
const relayBacklog = 4096

// eventRelay is this host's part of the fleet's events.
type eventRelay struct {
	out     chan eventstream.Event
	dropped atomic.Uint64
	stop    func() // stops observing the local stream

	// routed: triggers this member routed and follows itself (followRouted): the holder's
	// events for them would be a second copy. Guarded by Fleet.mu.
	routed map[string]time.Time
}

// relayKeep is how long a routed trigger's id is remembered after its follow began.
const relayKeep = 24 * time.Hour

// startEvents starts relaying this host's events and taking the others'.
func (f *Fleet) startEvents() error {
	src, ok := f.deps.Events.(interface {
		Observe(fn func(eventstream.Event)) (stop func())
	})
	if !ok {
		return nil
	}
	r := &eventRelay{out: make(chan eventstream.Event, relayBacklog), routed: map[string]time.Time{}}
	f.relay = r
	if _, err := f.nc.Subscribe(evAll, f.onEvent); err != nil {
		return err
	}
	r.stop = src.Observe(func(ev eventstream.Event) {
		if !f.ownEvent(ev) {
			return
		}
		select {
		case r.out <- ev:
		default:
			r.dropped.Add(1)
		}
	})
	f.goLoop(func() {
		subj := evSubject(f.cfg.HostName)
		for {
			select {
			case <-f.ctx.Done():
				return
			case ev := <-r.out:
				if err := f.nc.Publish(subj, ev.JSON()); err != nil && f.ctx.Err() == nil {
					r.dropped.Add(1)
				}
			}
		}
	})
	return nil
}

// ownEvent reports whether ev is this host's own: not relayed from another, and not a
// receipt of a trigger another host holds (this member's copy of one it routed).
func (f *Fleet) ownEvent(ev eventstream.Event) bool {
	if ev.Host != "" || ev.JSON() == nil {
		return false
	}
	if t, ok := ev.Trigger.(nudge.Trigger); ok && t.Host != "" && t.Host != f.cfg.HostName {
		return false
	}
	return true
}

// onEvent takes another host's event into this host's stream, with host set from the
// subject (the hub lets a member publish only under its own name). An event of a
// workspace another host holds is dropped: a member speaks only for its own.
func (f *Fleet) onEvent(m *nats.Msg) {
	from := token(m.Subject, 2)
	if from == f.cfg.HostName || !validName.MatchString(from) || f.srv != nil && !f.member(from) {
		return
	}
	var ev eventstream.Event
	if err := json.Unmarshal(m.Data, &ev); err != nil || ev.Type == "" {
		return
	}
	if ev.Workspace != "" && !f.speaksFor(from, ev.Workspace) || !payloadOf(ev, ev.Workspace) {
		return
	}
	if ev.Type == "trigger" && f.routedHereID(ev.Trigger) {
		return
	}
	ev.Seq, ev.Host, ev.Value = 0, from, nil
	f.deps.Events.Publish(ev)
}

// speaksFor reports whether host from may relay events of workspace ws: the host that
// holds it, or, while no host does yet (a runtime just spawned, its claim on its way),
// one that lists a runtime of it.
func (f *Fleet) speaksFor(from, ws string) bool {
	h, _ := f.HostOf(ws)
	if h != "" {
		return h == from
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.ContainsFunc(f.runtimes[from], func(rt nudge.Runtime) bool { return rt.WorkspaceID == ws })
}

// payloadOf reports whether what an event carries (its runtime, its trigger, the runtime
// its detail names) is of workspace ws, the one it is filed under and filtered by.
func payloadOf(ev eventstream.Event, ws string) bool {
	ofWS := func(runtimeID string) bool { return runtimeID == "" || strings.HasPrefix(runtimeID, "rt_"+ws+".") }
	for _, p := range []struct {
		v   any
		key string // the record's workspace field: a runtime's workspace_id, a trigger's workspace
	}{{ev.Runtime, "workspace_id"}, {ev.Trigger, "workspace"}} {
		if p.v == nil {
			continue
		}
		m, ok := p.v.(map[string]any)
		if !ok {
			return false
		}
		got, _ := m[p.key].(string)
		id, _ := m["runtime_id"].(string)
		if got != ws || !ofWS(id) {
			return false
		}
	}
	if len(ev.Detail) > 0 {
		var d struct {
			RuntimeID string `json:"runtime_id"`
			Workspace string `json:"workspace"`
		}
		if json.Unmarshal(ev.Detail, &d) == nil {
			if !ofWS(d.RuntimeID) || d.Workspace != "" && d.Workspace != ws {
				return false
			}
		}
	}
	return true
}

// noteRouted remembers that this member follows trigger id's receipt itself.
func (f *Fleet) noteRouted(id string) {
	if f.relay == nil {
		return
	}
	now := time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	for k, at := range f.relay.routed {
		if now.Sub(at) > relayKeep {
			delete(f.relay.routed, k)
		}
	}
	f.relay.routed[id] = now
}

// routedHereID reports whether a relayed trigger (decoded as JSON) is one this member
// routed and follows itself.
func (f *Fleet) routedHereID(t any) bool {
	m, ok := t.(map[string]any)
	if !ok || f.relay == nil {
		return false
	}
	id, _ := m["trigger_id"].(string)
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok = f.relay.routed[id]
	return ok
}

// stopEvents stops observing this host's stream (before the connection closes).
func (f *Fleet) stopEvents() {
	if f.relay != nil && f.relay.stop != nil {
		f.relay.stop()
	}
}
