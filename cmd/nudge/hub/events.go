package hub

import (
	"encoding/json"
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
	if ev.Workspace != "" {
		if h, _ := f.HostOf(ev.Workspace); h != "" && h != from {
			return
		}
	}
	if ev.Type == "trigger" && f.routedHereID(ev.Trigger) {
		return
	}
	ev.Seq, ev.Host, ev.Value = 0, from, nil
	f.deps.Events.Publish(ev)
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
