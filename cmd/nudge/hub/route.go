package hub

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/nudgehq/nudge"
	eventstream "github.com/nudgehq/nudge/cmd/nudge/events"
	"github.com/nudgehq/nudge/cmd/nudge/server"
	"github.com/nudgehq/nudge/inject"
	"github.com/nudgehq/nudge/panes"
	"github.com/nudgehq/nudge/store"
)

// wireTrigger is a trigger on its way through the hub: the request as the member that
// took it accepted it (its caller's token already checked there).
type wireTrigger struct {
	inject.Request
	From      string    `json:"-"` // the member that took the request: the subject's last token
	Caller    string    `json:"caller,omitempty"`
	CallerUID int       `json:"caller_uid"`
	Deadline  time.Time `json:"deadline"`
}

// Wrap makes the API's runtimes and triggers the fleet's: the runtime list holds every
// host's runtimes, and a trigger for a workspace held by another host goes there through
// the hub. The caller's token is checked by the API before either is called.
func (f *Fleet) Wrap(d *server.Deps) {
	if f == nil {
		return
	}
	d.Runtimes = fleetRuntimes{d.Runtimes, f}
	d.Triggers = fleetTriggers{d.Triggers, f}
	d.Store = fleetStore{d.Store, f}
	if d.Dialogs != nil {
		d.Dialogs = fleetDialogs{d.Dialogs, f}
	}
	if d.Panes != nil {
		d.Panes = fleetPanes{d.Panes, f}
	}
}

type fleetRuntimes struct {
	server.Runtimes
	f *Fleet
}

func (r fleetRuntimes) List() []nudge.Runtime { return append(r.Runtimes.List(), r.f.Remote()...) }

func (r fleetRuntimes) Get(id string) (nudge.Runtime, bool) {
	if rt, ok := r.Runtimes.Get(id); ok {
		return rt, true
	}
	return r.f.remoteRuntime(id)
}

type fleetTriggers struct {
	server.Triggers
	f *Fleet
}

// Submit routes a trigger: to this host's pipeline when the workspace is here (or held
// by no host, or the id is known here), else to the host that holds it.
func (t fleetTriggers) Submit(ctx context.Context, req inject.Request) (inject.Submitted, error) {
	if !t.f.up() && !t.f.holdsHere(req.Workspace) && !t.knownHere(req.TriggerID) {
		// Where the workspace lives is not known yet (a hub still reading its claims after
		// a restart, a member before the hub's first answer): taken here, a trigger for
		// another host's workspace would find no runtime. The sender tries again.
		return inject.Submitted{}, nudge.NewError(nudge.Unavailable, "the fleet's hub has not said yet which host holds workspace "+req.Workspace+": try again")
	}
	host, away := t.f.HostOf(req.Workspace)
	if host == "" || host == t.f.Host() || t.knownHere(req.TriggerID) {
		return t.Triggers.Submit(ctx, req)
	}
	return t.f.route(ctx, host, away, req)
}

func (t fleetTriggers) knownHere(id string) bool {
	if id == "" {
		return false
	}
	_, err := t.Triggers.Get(id)
	return !errors.Is(err, store.ErrNotFound)
}

func (t fleetTriggers) Get(id string) (nudge.Trigger, error) {
	tr, err := t.Triggers.Get(id)
	if !errors.Is(err, store.ErrNotFound) {
		return tr, err
	}
	if r, ok := t.f.receipt(id); ok {
		return r, nil
	}
	return tr, err
}

func (t fleetTriggers) Wait(ctx context.Context, id string, cond func(nudge.Trigger) bool) (nudge.Trigger, error) {
	if _, err := t.Triggers.Get(id); !errors.Is(err, store.ErrNotFound) {
		return t.Triggers.Wait(ctx, id, cond)
	}
	return t.f.wait(ctx, id, cond)
}

func (t fleetTriggers) Ack(ctx context.Context, id string) (nudge.Trigger, error) {
	if _, err := t.Triggers.Get(id); !errors.Is(err, store.ErrNotFound) {
		return t.Triggers.Ack(ctx, id)
	}
	return t.f.ack(ctx, id)
}

// route publishes req for host on the work queue, the trigger id its message id, and
// writes the receipt this member keeps for it (queued; the holder's own receipt wins
// once it writes one). A hub that cannot be reached is UNAVAILABLE: nothing was taken.
func (f *Fleet) route(ctx context.Context, host string, away bool, req inject.Request) (inject.Submitted, error) {
	if req.TriggerID == "" {
		req.TriggerID = newTriggerID()
	}
	if err := nudge.CheckID("trigger_id", req.TriggerID); err != nil {
		return inject.Submitted{}, err
	}
	if !f.up() {
		return inject.Submitted{}, nudge.NewError(nudge.Unavailable, "this host has not joined the fleet's hub yet: nothing was queued, send it again")
	}
	// A repeat is the hub's duplicate (the message id, kept 24 h), answered below with the
	// first one's receipt; past that, the holder's pipeline knows the id.
	now := time.Now().UTC()
	w := wireTrigger{Request: req, From: f.cfg.HostName, Caller: req.Caller, CallerUID: req.CallerUID, Deadline: now.Add(f.cfg.MaxQueue)}
	b, err := json.Marshal(w)
	if err != nil {
		return inject.Submitted{}, err
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	duplicate, err := f.api.route(pctx, host, req.TriggerID, b, f.cfg.MaxQueue)
	if err != nil {
		return inject.Submitted{}, nudge.NewError(nudge.Unavailable, "the fleet's hub did not take the trigger for host "+host+": "+err.Error()+" (nothing was queued: send it again)")
	}
	if duplicate {
		if prev, ok := f.routed(req.TriggerID); ok {
			return repeated(prev, req)
		}
	}
	deadline := w.Deadline
	t := nudge.Trigger{TriggerID: req.TriggerID, WorkspaceID: req.Workspace, Agent: req.Agent, Host: host,
		ThreadID: req.ThreadID, Prompt: req.Prompt, Reason: req.Reason, AckTimeoutMS: req.AckTimeoutMS,
		ForceOverride: req.ForceOverride, OverrideIntent: req.OverrideIntent, Caller: req.Caller, CallerUID: req.CallerUID,
		State: nudge.StateQueued, CreatedAt: now, QueuedAt: now, UpdatedAt: now, DeferredUntil: &deadline,
		Message: "routed through the fleet's hub to host " + host}
	if away {
		t.Message = "host " + host + " is away: queued in the fleet's hub until it returns (or deferred_until passes)"
	}
	t.Result = inject.ResultFor(t)
	f.putReceipt(ctx, t)
	f.followRouted(t)
	return inject.Submitted{Trigger: t, Created: true}, nil
}

// followRouted puts a routed trigger's receipt on this member's event stream, as the
// trigger's holder writes it, until it is closed (or this daemon stops).
func (f *Fleet) followRouted(t nudge.Trigger) {
	if f.deps.Events == nil {
		return
	}
	f.noteRouted(t.TriggerID)
	f.deps.Events.Publish(eventstream.Event{Type: "trigger", Workspace: t.WorkspaceID, Trigger: t})
	ch := make(chan *nats.Msg, 64)
	sub, err := f.nc.ChanSubscribe("$KV."+bucketRcpt+"."+t.Host+"."+key(t.TriggerID), ch)
	if err != nil {
		return
	}
	f.goLoop(func() {
		defer sub.Unsubscribe() //nolint:errcheck // best effort
		last := t
		publish := func(r nudge.Trigger) bool {
			if r.TriggerID != t.TriggerID || r.WorkspaceID != t.WorkspaceID || r.Host != t.Host {
				return false
			}
			if r.State != last.State || !r.UpdatedAt.Equal(last.UpdatedAt) || r.Closed != last.Closed {
				f.deps.Events.Publish(eventstream.Event{Type: "trigger", Workspace: r.WorkspaceID, Trigger: r})
				last = r
			}
			return r.Closed
		}
		if r, ok := f.getReceipt(t.Host, t.TriggerID); ok && publish(r) { // written before the subscription
			return
		}
		for {
			select {
			case <-f.ctx.Done():
				return
			case m := <-ch:
				var r nudge.Trigger
				if json.Unmarshal(m.Data, &r) == nil && publish(r) {
					return
				}
			}
		}
	})
}

// repeated answers a trigger id seen before: its receipt, or a conflict when the request
// differs from the first.
func repeated(prev nudge.Trigger, req inject.Request) (inject.Submitted, error) {
	if prev.WorkspaceID != req.Workspace || prev.Agent != req.Agent || prev.Prompt != req.Prompt {
		return inject.Submitted{}, nudge.NewError(nudge.IdempotencyConflict, "trigger_id "+req.TriggerID+" was used with another workspace, agent or prompt")
	}
	return inject.Submitted{Trigger: prev}, nil
}

// putReceipt writes t under this host's name, retrying while the hub is away; false
// when this daemon stopped first.
func (f *Fleet) putReceipt(ctx context.Context, t nudge.Trigger) bool {
	b, err := json.Marshal(t)
	if err != nil {
		return false
	}
	for {
		err := f.api.putReceipt(ctx, t.TriggerID, b)
		if err == nil {
			return true
		}
		if ctx.Err() != nil || f.ctx.Err() != nil {
			return false
		}
		f.log.Debug("hub receipt", "trigger", t.TriggerID, "err", err)
		select {
		case <-ctx.Done():
		case <-f.ctx.Done():
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// getReceipt reads the receipt writer keeps for id.
func (f *Fleet) getReceipt(writer, id string) (nudge.Trigger, bool) {
	ctx, cancel := context.WithTimeout(f.ctx, 5*time.Second)
	defer cancel()
	b, err := f.api.getReceipt(ctx, writer, id)
	if err != nil {
		return nudge.Trigger{}, false
	}
	var t nudge.Trigger
	if json.Unmarshal(b, &t) != nil || t.TriggerID != id {
		return nudge.Trigger{}, false
	}
	return t, true
}

// receipt is a routed trigger's receipt: the holder's (Host names it) when it wrote one,
// else the routing member's, failed DEFER_TIMEOUT once its deadline passed.
func (f *Fleet) receipt(id string) (nudge.Trigger, bool) {
	if t, ok := f.routed(id); ok {
		return t, true
	}
	t, _, ok := f.askHosts(id)
	return t, ok
}

// routed is the receipt of a trigger routed through the hub, from the receipts bucket.
func (f *Fleet) routed(id string) (nudge.Trigger, bool) {
	if !f.up() {
		return nudge.Trigger{}, false
	}
	for _, h := range f.hosts() {
		t, ok := f.getReceipt(h, id)
		if !ok {
			continue
		}
		if t.Host == h {
			return t, true // the holder's own
		}
		if own, ok := f.getReceipt(t.Host, id); ok && own.Host == t.Host {
			return own, true
		}
		if t.DeferredUntil != nil && time.Now().After(*t.DeferredUntil) && !t.Closed {
			at := *t.DeferredUntil
			t.State, t.Closed, t.ErrorCode, t.FailedAt, t.UpdatedAt = nudge.StateFailed, true, nudge.DeferTimeout, &at, at
			t.Message = "host " + t.Host + " did not take it before its deadline (--hub-max-queue)"
			t.Result = inject.ResultFor(t)
		}
		return t, true
	}
	return nudge.Trigger{}, false
}

// askHosts asks every other host that is here for its own trigger id (one not routed
// through the hub: a trigger taken on that host).
func (f *Fleet) askHosts(id string) (t nudge.Trigger, holder string, ok bool) {
	hosts := f.otherHosts()
	type answer struct {
		t nudge.Trigger
		h string
	}
	found := make(chan answer, len(hosts))
	var wg sync.WaitGroup
	for _, h := range hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r, err := f.control(h, "get", id); err == nil {
				found <- answer{r, h}
			}
		}()
	}
	wg.Wait()
	close(found)
	a, ok := <-found
	return a.t, a.h, ok
}

// control sends a request about trigger id to host h.
func (f *Fleet) control(h, op, id string) (nudge.Trigger, error) {
	r, err := f.controlData(h, op, []byte(id))
	return r.Trigger, err
}

// controlData sends request op with data to host h and reads its answer.
func (f *Fleet) controlData(h, op string, data []byte) (ctlReply, error) {
	ctx, cancel := context.WithTimeout(f.ctx, 2*time.Second)
	defer cancel()
	m, err := f.nc.RequestWithContext(ctx, ctlSubject(h, f.cfg.HostName, op), data)
	if err != nil {
		return ctlReply{}, nudge.NewError(nudge.Unavailable, "host "+h+" did not answer: "+err.Error())
	}
	var r ctlReply
	if err := json.Unmarshal(m.Data, &r); err != nil {
		return ctlReply{}, err
	}
	if r.Code != "" {
		return r, nudge.NewError(r.Code, r.Message)
	}
	return r, nil
}

// wait blocks until a routed trigger's receipt meets cond (or ctx ends): every write of
// a receipt for id is seen on the bucket's subject as it happens.
func (f *Fleet) wait(ctx context.Context, id string, cond func(nudge.Trigger) bool) (nudge.Trigger, error) {
	ch := make(chan *nats.Msg, 16)
	sub, err := f.nc.ChanSubscribe("$KV."+bucketRcpt+".*."+key(id), ch)
	if err != nil {
		return nudge.Trigger{}, err
	}
	defer sub.Unsubscribe() //nolint:errcheck // best effort
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		t, ok := f.receipt(id)
		if !ok {
			return t, fmt.Errorf("get trigger %s: %w", id, store.ErrNotFound)
		}
		if cond(t) {
			return t, nil
		}
		select {
		case <-ctx.Done():
			return t, ctx.Err()
		case <-ch:
		case <-tick.C:
		}
	}
}

// ack sends an API ack to the host that holds the trigger.
func (f *Fleet) ack(_ context.Context, id string) (nudge.Trigger, error) {
	if !f.up() {
		return nudge.Trigger{}, fmt.Errorf("get trigger %s: %w", id, store.ErrNotFound)
	}
	holder := ""
	for _, h := range f.hosts() { // routed through the hub: its holder wrote a receipt
		if t, ok := f.getReceipt(h, id); ok && t.Host == h {
			holder = h
			break
		}
	}
	if holder == "" {
		if _, h, ok := f.askHosts(id); ok {
			holder = h
		}
	}
	if holder == "" {
		return nudge.Trigger{}, fmt.Errorf("get trigger %s: %w", id, store.ErrNotFound)
	}
	return f.control(holder, "ack", id)
}

// ctlReply is a host's answer to a control request.
type ctlReply struct {
	Trigger nudge.Trigger   `json:"trigger"`
	List    []nudge.Trigger `json:"list,omitempty"`
	Runtime *nudge.Runtime  `json:"runtime,omitempty"`
	Screen  *panes.Screen   `json:"screen,omitempty"`
	Answer  *answered       `json:"answer,omitempty"`
	Code    nudge.Code      `json:"error_code,omitempty"`
	Message string          `json:"message,omitempty"`
}

func newTriggerID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "trg_" + time.Now().UTC().Format("20060102T150405") + "_" + hex.EncodeToString(b[:])
}
