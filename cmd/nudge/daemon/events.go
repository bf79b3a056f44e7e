package daemon

import eventstream "github.com/nudgehq/nudge/cmd/nudge/events"

// Event is one event of /v1/events (package events numbers, keeps and serves them).
type Event = eventstream.Event
