package hub

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/inject"
	"github.com/nudgehq/nudge/store"
)

// consume starts this host's durable consumer of its triggers on the work queue
// (waiting for the hub while it is away).
func (f *Fleet) consume() error {
	f.goLoop(func() {
		for f.ctx.Err() == nil {
			cons, err := f.js.CreateOrUpdateConsumer(f.ctx, triggerStream, jetstream.ConsumerConfig{
				Durable: durable(f.cfg.HostName), FilterSubject: triggersFor(f.cfg.HostName),
				AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second, MaxAckPending: 256,
			})
			if err == nil {
				var cc jetstream.ConsumeContext
				if cc, err = cons.Consume(f.onTrigger); err == nil {
					<-f.ctx.Done()
					cc.Stop()
					return
				}
			}
			f.log.Warn("hub: cannot consume this host's triggers yet", "err", err)
			select {
			case <-f.ctx.Done():
			case <-time.After(time.Second):
			}
		}
	})
	return nil
}

// onTrigger hands a trigger from the hub to the local pipeline. The message is acked
// only once the pipeline holds the trigger and this host's receipt for it is written: a
// crash before that has the hub deliver it again, and the pipeline answers a known id
// with its record, never a second delivery.
func (f *Fleet) onTrigger(m jetstream.Msg) {
	var w wireTrigger
	if err := json.Unmarshal(m.Data(), &w); err != nil || w.TriggerID == "" {
		f.log.Warn("hub: unreadable trigger message dropped", "err", err)
		m.Term() //nolint:errcheck // nothing to do
		return
	}
	w.From = token(m.Subject(), 3) // the sender, as the hub's permissions vouch for it
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
			m.NakWithDelay(time.Second) //nolint:errcheck // redelivered after AckWait anyway
			return
		}
	}
	t.Host = f.cfg.HostName
	f.putReceipt(f.ctx, t)
	if err := m.DoubleAck(f.ctx); err != nil {
		f.log.Debug("hub ack", "trigger", t.TriggerID, "err", err) // delivered again: the pipeline knows it
	}
	if !t.Closed {
		f.startFollow(t.TriggerID)
	}
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
		for {
			t, err := f.deps.Local.Wait(f.ctx, id, func(t nudge.Trigger) bool {
				return t.State != last.State || t.Closed != last.Closed || !t.UpdatedAt.Equal(last.UpdatedAt)
			})
			if err != nil {
				return
			}
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
		kl, err := f.kv[bucketRcpt].ListKeysFiltered(f.ctx, f.cfg.HostName+".*")
		if err != nil {
			f.log.Warn("hub: list this host's receipts", "err", err)
			return
		}
		var keys []string
		for k := range kl.Keys() {
			keys = append(keys, k)
		}
		for _, k := range keys {
			e, err := f.kv[bucketRcpt].Get(f.ctx, k)
			var t nudge.Trigger
			if err != nil || json.Unmarshal(e.Value(), &t) != nil {
				continue
			}
			if t.Host == f.cfg.HostName && !t.Closed {
				f.startFollow(t.TriggerID)
			}
		}
	})
}

// onControl answers another member's request about a trigger this host holds: its
// receipt (get), an API ack (ack), or the answer to a dialog of one of its runtimes. The member that took the request checked its
// caller's token; members are the fleet's daemons, each trusted to do so.
func (f *Fleet) onControl(m *nats.Msg) {
	from, op := token(m.Subject, 3), token(m.Subject, 4)
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
	m.Respond(b) //nolint:errcheck // the requester times out
}
