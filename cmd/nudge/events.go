package main

import (
	eventstream "github.com/nudgehq/nudge/cmd/nudge/events"
	"github.com/nudgehq/nudge/cmd/nudge/notify"
	"github.com/nudgehq/nudge/panes"
)

// Event is one event of /v1/events (package events numbers, keeps and serves them).
type Event = eventstream.Event

// eventsConfig is the hub's configuration: the kept window from the flags.
func (d *daemon) eventsConfig() eventstream.Config {
	c := d.cfg.Events
	c.OnError = func(op string, err error) { d.log.Error("events", "op", op, "err", err) }
	return c
}

// openNotifier starts the notifications: fed by the hub, shown through the registry's
// control connections.
func (d *daemon) openNotifier() *notify.Notifier {
	c := d.cfg.Notify
	c.Session, c.Logger = panes.SessionName, d.log.Named("notify")
	return notify.New(c, d.hub, d.reg)
}
