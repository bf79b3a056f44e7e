package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/inject"
	"github.com/nudgehq/nudge/store"
)

// deliver runs, on the hub, one durable consumer per host (each member of --hub-users and
// the hub's own) of its triggers on the work queue. A trigger for the hub's host is taken
// here; one for a member is sent to it (nudge.deliver.HOST) and acked once the member
// answers that it took it. A member away is tried again every 2 s until it answers or
// the message's TTL (the trigger's deadline) takes it off the queue.
func (f *Fleet) deliver(ctx context.Context) error {
	hosts := []string{f.cfg.HostName}
	for h := range f.allowed {
		if h != f.cfg.HostName {
			hosts = append(hosts, h)
		}
	}
	for _, h := range hosts {
		if err := f.startConsumer(ctx, h); err != nil {
			return err
		}
	}
	return nil
}

// startConsumer starts host h's durable consumer of its triggers (the hub's); it stops
// with the fleet, or when h leaves the members (stopConsumer).
func (f *Fleet) startConsumer(ctx context.Context, h string) error {
	cons, err := f.js.CreateOrUpdateConsumer(ctx, triggerStream, jetstream.ConsumerConfig{
		Durable: durable(h), FilterSubject: triggersFor(h),
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second, MaxAckPending: 256,
	})
	if err != nil {
		return fmt.Errorf("hub consumer for %s: %w", h, err)
	}
	cc, err := cons.Consume(func(m jetstream.Msg) { f.handOver(h, m) })
	if err != nil {
		return fmt.Errorf("hub consumer for %s: %w", h, err)
	}
	cctx, stop := context.WithCancel(f.ctx)
	f.mu.Lock()
	if f.consumers == nil {
		f.consumers = map[string]context.CancelFunc{}
	}
	f.consumers[h] = stop
	f.mu.Unlock()
	f.goLoop(func() {
		<-cctx.Done()
		cc.Stop()
	})
	return nil
}

// stopConsumer stops host h's consumer: its triggers wait in the stream (until their
// deadline) for it to be a member again.
func (f *Fleet) stopConsumer(h string) {
	f.mu.Lock()
	stop := f.consumers[h]
	delete(f.consumers, h)
	f.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// handOver takes a trigger off the queue for host h (the hub's).
func (f *Fleet) handOver(h string, m jetstream.Msg) {
	from := token(m.Subject(), 3) // the sender, as the hub's permissions vouch for it
	ok := false
	if h == f.cfg.HostName {
		ok = f.take(m.Data(), from)
	} else {
		out := nats.NewMsg(deliverSubject(h))
		out.Data = m.Data()
		out.Header.Set("Nudge-From", from)
		ctx, cancel := context.WithTimeout(f.ctx, 20*time.Second)
		r, err := f.nc.RequestMsgWithContext(ctx, out)
		cancel()
		ok = err == nil && string(r.Data) == "ok"
	}
	if !ok {
		m.NakWithDelay(2 * time.Second) //nolint:errcheck // redelivered after AckWait anyway
		return
	}
	if err := m.DoubleAck(f.ctx); err != nil {
		f.log.Debug("hub ack", "err", err) // delivered again: the pipeline knows it
	}
}

// onDeliver takes a trigger the hub hands this member, and answers "ok" once taken, or
// "again" when it could not take it now (the hub hands it over again 2 s later).
func (f *Fleet) onDeliver(m *nats.Msg) {
	if m.Reply == "" || m.Header.Get("Status") != "" {
		return // not the hub's request
	}
	answer := "ok"
	if !f.take(m.Data, m.Header.Get("Nudge-From")) {
		answer = "again" // at once: the hub's request would otherwise wait out its timeout, and every trigger behind this one with it
	}
	m.Respond([]byte(answer)) //nolint:errcheck // the hub delivers it again
}

// take hands a trigger from the hub to the local pipeline. It reports true only once the
// pipeline holds the trigger and this host's receipt for it is written: the hub delivers
// it again otherwise, and the pipeline answers a known id with its record, never a second
// delivery. An unreadable message is taken (and dropped).
func (f *Fleet) take(data []byte, from string) bool {
	var w wireTrigger
	if err := json.Unmarshal(data, &w); err != nil || w.TriggerID == "" || !validName.MatchString(from) {
		f.log.Warn("hub: unreadable trigger message dropped", "err", err)
		return true
	}
	w.From = from
	req := w.Request
	req.Caller, req.CallerUID, req.Received = "hub:"+w.From+":"+w.Caller, w.CallerUID, time.Time{}
	var t nudge.Trigger
	if _, err := f.deps.Local.Get(req.TriggerID); err != nil && !w.Deadline.IsZero() && time.Now().After(w.Deadline) {
		t = f.failed(w, nudge.DeferTimeout, "host "+f.cfg.HostName+" was away past the trigger's deadline (--hub-max-queue)")
	} else {
		res, err := f.deps.Local.Submit(f.ctx, req)
		var ne *nudge.Error
		switch {
		case err == nil:
			t = res.Trigger
		case errors.As(err, &ne) && ne.Code != nudge.Unavailable:
			t = f.failed(w, ne.Code, ne.Message)
		default:
			f.log.Warn("hub: the pipeline did not take a trigger; the hub delivers it again", "trigger", req.TriggerID, "err", err)
			return false
		}
	}
	t.Host = f.cfg.HostName
	if !f.putReceipt(f.ctx, t) {
		return false
	}
	if !t.Closed {
		f.startFollow(t.TriggerID)
	}
	return true
}

// failed is the receipt of a trigger this host refused.
func (f *Fleet) failed(w wireTrigger, code nudge.Code, msg string) nudge.Trigger {
	now := time.Now().UTC()
	t := nudge.Trigger{TriggerID: w.TriggerID, WorkspaceID: w.Workspace, Agent: w.Agent, ThreadID: w.ThreadID,
		Prompt: w.Prompt, Caller: w.Caller, CallerUID: w.CallerUID, State: nudge.StateFailed, ErrorCode: code,
		Message: msg, Closed: true, CreatedAt: now, QueuedAt: now, FailedAt: &now, UpdatedAt: now}
	t.Result = inject.ResultFor(t)
	return t
}

// followRecheck is how often a followed trigger is read again without news of it;
// followFailures how many reads in a row may fail (about an hour) before it is let go.
const (
	followRecheck  = 5 * time.Second
	followFailures = 720
)

// startFollow publishes a trigger's receipt on every change until it is closed.
func (f *Fleet) startFollow(id string) {
	f.mu.Lock()
	if f.follow[id] {
		f.mu.Unlock()
		return
	}
	f.follow[id] = true
	f.mu.Unlock()
	f.goLoop(func() {
		defer func() {
			f.mu.Lock()
			delete(f.follow, id)
			f.mu.Unlock()
		}()
		var last nudge.Trigger
		failing := 0
		for {
			// A bounded wait: a change the store writes behind the pipeline's back (the
			// closing update it could not write while the disk was full, written once it
			// can) wakes no waiter, and is read at the next look.
			ctx, cancel := context.WithTimeout(f.ctx, followRecheck)
			t, err := f.deps.Local.Wait(ctx, id, func(t nudge.Trigger) bool {
				return t.State != last.State || t.Closed != last.Closed || !t.UpdatedAt.Equal(last.UpdatedAt)
			})
			timedOut := ctx.Err() != nil
			cancel()
			switch {
			case f.ctx.Err() != nil:
				return
			case err != nil && timedOut:
				continue
			case err != nil:
				if failing++; failing > followFailures {
					f.log.Warn("hub: a trigger's receipt is no longer followed", "trigger", id, "err", err)
					return
				}
				select {
				case <-f.ctx.Done():
					return
				case <-time.After(followRecheck):
				}
				continue
			}
			failing = 0
			t.Host = f.cfg.HostName
			f.putReceipt(f.ctx, t)
			if last = t; t.Closed {
				return
			}
		}
	})
}

// resumeFollows follows again, after a restart, the triggers this host holds whose
// receipts were not closed.
func (f *Fleet) resumeFollows() {
	f.goLoop(func() {
		for f.ctx.Err() == nil {
			recs, err := f.api.mine(f.ctx)
			if err == nil {
				for _, b := range recs {
					var t nudge.Trigger
					if json.Unmarshal(b, &t) == nil && t.Host == f.cfg.HostName && !t.Closed {
						f.startFollow(t.TriggerID)
					}
				}
				return
			}
			select { // the hub is away: again
			case <-f.ctx.Done():
			case <-time.After(time.Second):
			}
		}
	})
}

// onControl answers another member's request about a trigger this host holds: its
// receipt (get), an API ack (ack), or the answer to a dialog of one of its runtimes. The member that took the request checked its
// caller's token; members are the fleet's daemons, each trusted to do so.
func (f *Fleet) onControl(m *nats.Msg) {
	from, op := token(m.Subject, 3), token(m.Subject, 4)
	if !strings.HasPrefix(m.Reply, inboxPrefix(from)+".") || m.Header.Get("Status") != "" {
		return // a reply elsewhere than the requester's own inbox would publish in this host's name
	}
	id := string(m.Data)
	var (
		r   ctlReply
		err error
	)
	switch op {
	case "get":
		r.Trigger, err = f.deps.Local.Get(id)
	case "ack":
		ctx, cancel := context.WithTimeout(f.ctx, 5*time.Second)
		r.Trigger, err = f.deps.Local.Ack(ctx, id)
		cancel()
	case "answer":
		r.Answer, err = f.answerHere(from, m.Data)
	case "list":
		r.List, err = f.listHere(m.Data)
	case "manage":
		r, err = f.manageHere(from, m.Data)
	default:
		err = nudge.NewError(nudge.BadRequest, "unknown request "+op)
	}
	var ne *nudge.Error
	switch {
	case errors.As(err, &ne):
		r.Code, r.Message = ne.Code, ne.Message
	case errors.Is(err, store.ErrNotFound):
		r.Code, r.Message = nudge.NotFound, err.Error()
	case err != nil:
		r.Code, r.Message = nudge.Internal, err.Error()
	}
	if r.Code == "" && r.Trigger.Host == "" {
		r.Trigger.Host = f.cfg.HostName
	}
	b, _ := json.Marshal(r)
	if err := m.Respond(b); err != nil {
		// Too large for the connection (a list of long prompts, a screen of long lines):
		// say so rather than leave the requester waiting out its time.
		f.log.Warn("hub: a reply could not be sent", "op", op, "to", from, "bytes", len(b), "err", err)
		small, _ := json.Marshal(ctlReply{Code: nudge.Unavailable, Message: fmt.Sprintf("host %s: its reply (%d bytes) could not be sent: %v", f.cfg.HostName, len(b), err)})
		m.Respond(small) //nolint:errcheck // the requester times out
	}
}
