package main

import eventstream "github.com/nudgehq/nudge/cmd/nudge/events"

// Event is one event of /v1/events (package events numbers, keeps and serves them).
type Event = eventstream.Event

// eventsConfig is the hub's configuration: the kept window from the flags.
func (d *daemon) eventsConfig() eventstream.Config {
	c := d.cfg.Events
	c.OnError = func(op string, err error) { d.log.Error("events", "op", op, "err", err) }
	return c
}
