package tui

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nudgehq/nudge/cmd/nudge/api"
)

// watchFeed is the I/O goroutine: a snapshot, then /v1/events, sent to the UI as messages.
// Nothing polls the daemon for the list: the stream keeps it current.
type watchFeed struct {
	ctx  context.Context
	c    *api.Client
	msgs chan<- any
}

// send hands a message to the UI goroutine unless the UI has gone.
func (f *watchFeed) send(v any) bool {
	select {
	case f.msgs <- v:
		return true
	case <-f.ctx.Done():
		return false
	}
}

// stream keeps /v1/events open: snapshot, then events, reconnecting when it drops.
func (f *watchFeed) stream(ctx context.Context) {
	for ctx.Err() == nil {
		err := f.streamOnce(ctx)
		if ctx.Err() != nil || !f.send(watchDown{err}) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(watchReconnect):
		}
	}
}

func (f *watchFeed) streamOnce(ctx context.Context) error {
	// The stream has no timeout (the feed is its own goroutine; ctx ends it).
	resp, err := f.c.Send(ctx, "GET", "/v1/events", nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("events: %s", resp.Status)
	}
	// Subscribed first, then the snapshot: nothing falls between the two.
	snap, err := f.snapshot(ctx)
	if err != nil {
		return err
	}
	if !f.send(watchConnected{snap}) {
		return nil
	}
	r := bufio.NewReader(resp.Body)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			var ev wireEvent
			if json.Unmarshal(line, &ev) == nil && !f.send(ev) {
				return nil
			}
		}
		if err != nil {
			return err
		}
	}
}

func (f *watchFeed) snapshot(ctx context.Context) (watchSnapshot, error) {
	ctx, cancel := shortCtx(ctx)
	defer cancel()
	var s watchSnapshot
	var err error
	if s.runtimes, err = f.c.Runtimes(ctx, ""); err != nil {
		return s, err
	}
	open, err := f.c.Triggers(ctx, api.TriggerFilter{OpenOnly: true})
	if err != nil {
		return s, err
	}
	for _, rt := range s.runtimes {
		ts, err := f.c.Triggers(ctx, api.TriggerFilter{RuntimeID: rt.RuntimeID, Newest: true, Limit: 1})
		if err != nil {
			return s, err
		}
		s.triggers = append(s.triggers, ts...)
	}
	s.triggers = append(s.triggers, open...)
	return s, nil
}

// historyShown is how many of a runtime's newest triggers its page reads.
const historyShown = 20

// fetchDetail reads a runtime's screen and newest triggers off the UI goroutine.
func (ui *watchUI) fetchDetail(id string) {
	if id == "" {
		return
	}
	ui.m.fetching = true
	ui.calls.Go(func() {
		ctx, cancel := shortCtx(ui.ctx)
		defer cancel()
		d := watchDetail{id: id}
		var tv api.Tail
		if tv, d.tailErr = ui.c.Tail(ctx, id, 200); d.tailErr == nil {
			d.tail, d.capturedAt = tv.Lines, tv.CapturedAt
		}
		d.history, d.err = ui.c.Triggers(ctx, api.TriggerFilter{RuntimeID: id, Newest: true, Limit: historyShown})
		ui.feed.send(d)
	})
}

// fetchTrigger reads a trigger and its audit records off the UI goroutine.
func (ui *watchUI) fetchTrigger(id string) {
	ui.calls.Go(func() {
		ctx, cancel := shortCtx(ui.ctx)
		defer cancel()
		d := watchTrigger{}
		if d.t, d.err = ui.c.GetTrigger(ctx, id, 0); d.err == nil {
			d.audit, d.err = ui.c.Audit(ctx, id)
		}
		d.t.TriggerID = id
		ui.feed.send(d)
	})
}

// async runs fn off the UI goroutine and shows its answer.
func (ui *watchUI) async(fn func(ctx context.Context) string) {
	ui.calls.Go(func() {
		ctx, cancel := shortCtx(ui.ctx)
		defer cancel()
		ui.feed.send(watchResult{fn(ctx)})
	})
}

// refreshPage refetches what the open page shows.
func (ui *watchUI) refreshPage() {
	switch ui.m.page {
	case pageRuntime:
		ui.fetchDetail(ui.m.sel)
	case pageTrigger:
		ui.fetchTrigger(ui.m.trig.TriggerID)
	}
}
