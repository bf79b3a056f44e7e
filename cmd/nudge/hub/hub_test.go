package hub

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/nudgehq/nudge"
	eventstream "github.com/nudgehq/nudge/cmd/nudge/events"
	"github.com/nudgehq/nudge/cmd/nudge/server"
	"github.com/nudgehq/nudge/inject"
	"github.com/nudgehq/nudge/store"
)

// fakeLocal is a pipeline that takes every trigger at once and closes it.
type fakeLocal struct {
	mu   sync.Mutex
	seen map[string]int // submits per trigger id that created a record
	recs map[string]nudge.Trigger
}

var _ Local = (*fakeLocal)(nil)

func newFakeLocal() *fakeLocal {
	return &fakeLocal{seen: map[string]int{}, recs: map[string]nudge.Trigger{}}
}

func (l *fakeLocal) Submit(_ context.Context, req inject.Request) (inject.Submitted, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if t, ok := l.recs[req.TriggerID]; ok {
		return inject.Submitted{Trigger: t}, nil
	}
	now := time.Now()
	t := nudge.Trigger{TriggerID: req.TriggerID, WorkspaceID: req.Workspace, Agent: req.Agent, Prompt: req.Prompt,
		Caller: req.Caller, State: nudge.StateSubmitted, Closed: true, CreatedAt: now, SubmittedAt: &now, UpdatedAt: now}
	l.recs[req.TriggerID] = t
	l.seen[req.TriggerID]++
	return inject.Submitted{Trigger: t, Created: true}, nil
}

func (l *fakeLocal) Get(id string) (nudge.Trigger, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if t, ok := l.recs[id]; ok {
		return t, nil
	}
	return nudge.Trigger{}, fmt.Errorf("get %s: %w", id, store.ErrNotFound)
}

func (l *fakeLocal) Wait(ctx context.Context, id string, cond func(nudge.Trigger) bool) (nudge.Trigger, error) {
	for {
		t, err := l.Get(id)
		if err != nil || cond(t) {
			return t, err
		}
		select {
		case <-ctx.Done():
			return t, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func (l *fakeLocal) Ack(_ context.Context, id string) (nudge.Trigger, error) { return l.Get(id) }

func (l *fakeLocal) count(id string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seen[id]
}

// fakeRuntimes lists one runtime per workspace.
type fakeRuntimes struct{ ws []string }

func (r fakeRuntimes) List() []nudge.Runtime {
	var out []nudge.Runtime
	for _, ws := range r.ws {
		out = append(out, nudge.Runtime{RuntimeID: nudge.RuntimeID(ws, "a"), WorkspaceID: ws, Role: "a", Status: nudge.StatusReady})
	}
	return out
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) { w.t.Log(string(b)); return len(b), nil }

// fakeEvents records the events published.
type fakeEvents struct {
	mu  sync.Mutex
	evs []eventstream.Event
}

func (e *fakeEvents) Publish(ev eventstream.Event) eventstream.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.evs = append(e.evs, ev)
	return ev
}

// states is the trigger states of id's events, in order.
func (e *fakeEvents) states(id string) []nudge.TriggerState {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []nudge.TriggerState
	for _, ev := range e.evs {
		if t, ok := ev.Trigger.(nudge.Trigger); ok && ev.Type == "trigger" && t.TriggerID == id {
			out = append(out, t.State)
		}
	}
	return out
}

// fakeDialogs records who answered which runtime's dialog.
type fakeDialogs struct {
	mu  sync.Mutex
	got []string
}

func (d *fakeDialogs) Answer(_ context.Context, rt nudge.Runtime, dialogID, choice, who, _ string) (nudge.Dialog, nudge.DialogOption, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.got = append(d.got, rt.RuntimeID+" "+dialogID+" "+choice+" "+who)
	return nudge.Dialog{DialogID: dialogID}, nudge.DialogOption{Key: choice}, nil
}

func (d *fakeDialogs) answers() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.got)
}

type member struct {
	dialogs *fakeDialogs
	f       *Fleet
	local   *fakeLocal
	events  *fakeEvents
	cfg     Config
	ws      []string
}

func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func openMember(t *testing.T, cfg Config, ws ...string) member {
	t.Helper()
	m := member{local: newFakeLocal(), cfg: cfg, ws: ws, events: &fakeEvents{}, dialogs: &fakeDialogs{}}
	cfg.Heartbeat = 100 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	log := hclog.New(&hclog.LoggerOptions{Name: cfg.HostName, Level: hclog.Debug, Output: testWriter{t}})
	f, err := Open(ctx, cfg, Deps{Local: m.local, Runtimes: fakeRuntimes{ws}, Events: m.events, Dialogs: m.dialogs, StateDir: t.TempDir(), Logger: log})
	if err != nil {
		t.Fatalf("open %s: %v", cfg.HostName, err)
	}
	t.Cleanup(func() { f.Close() })
	m.f = f
	return m
}

// fleet is a hub and two members, a and b (b may hold only wb).
func fleet(t *testing.T) (hub, a, b member, dir string) {
	dir = t.TempDir()
	users := writeFile(t, dir, "users", "a secret-a\nb secret-b wb\n")
	cfg := DefaultConfig()
	cfg.Listen, cfg.HostName, cfg.Users = "127.0.0.1:0", "hub", users
	hub = openMember(t, cfg, "wh")
	mc := DefaultConfig()
	mc.URL = "nats://" + hub.f.Addr()
	mc.HostName, mc.Credentials = "a", writeFile(t, dir, "a.cred", "a secret-a\n")
	a = openMember(t, mc, "wa")
	mc.HostName, mc.Credentials = "b", writeFile(t, dir, "b.cred", "b secret-b\n")
	b = openMember(t, mc, "wb", "wa") // b also lists wa: not its own
	for _, ws := range []string{"wh", "wa", "wb"} {
		waitFor(t, "claim of "+ws, func() bool {
			h, _ := a.f.HostOf(ws)
			h2, _ := b.f.HostOf(ws)
			return h != "" && h2 != "" && a.f.up() && b.f.up()
		})
	}
	return hub, a, b, dir
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !ok(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
	}
}

func deps(m member) server.Deps {
	d := server.Deps{Runtimes: nil, Triggers: nil}
	d.Triggers = localTriggers{m.local}
	d.Dialogs = m.dialogs
	m.f.Wrap(&d)
	return d
}

// localTriggers gives a fakeLocal the rest of server.Triggers.
type localTriggers struct{ *fakeLocal }

func (localTriggers) Depth(string) int                               { return 0 }
func (localTriggers) Kick(string)                                    {}
func (localTriggers) Progress(_, _, _ string)                        {}
func (localTriggers) Force(_, _, _, _ string) (nudge.Trigger, error) { return nudge.Trigger{}, nil }
func (localTriggers) Unblock(string, func(string) bool) []string     { return nil }
func (l localTriggers) Wait(ctx context.Context, id string, c func(nudge.Trigger) bool) (nudge.Trigger, error) {
	return l.fakeLocal.Wait(ctx, id, c)
}

func TestRoute(t *testing.T) {
	t.Parallel()
	hub, a, b, _ := fleet(t)
	if h, _ := hub.f.HostOf("wa"); h != "a" {
		t.Fatalf("wa is held by %q, want a (b listed it second)", h)
	}
	d := deps(b)
	ctx := context.Background()
	req := inject.Request{TriggerID: "t-1", Workspace: "wa", Agent: "a", Prompt: "hello"}
	res, err := d.Triggers.Submit(ctx, req)
	if err != nil || !res.Created || res.Trigger.Host != "a" {
		t.Fatalf("route: %+v, %v", res, err)
	}
	got, err := d.Triggers.Wait(ctx, "t-1", func(t nudge.Trigger) bool { return t.Closed })
	if err != nil || got.State != nudge.StateSubmitted || got.Host != "a" {
		t.Fatalf("receipt: %+v, %v", got, err)
	}
	// b's event stream has the receipt as it went: queued on b, submitted on a.
	waitFor(t, "t-1's events on b", func() bool { return slices.Equal(b.events.states("t-1"), []nudge.TriggerState{"queued", "submitted"}) })
	// A repeat, on any member, is the same receipt, never a second delivery.
	for _, m := range []member{b, hub} {
		res, err := deps(m).Triggers.Submit(ctx, req)
		if err != nil || res.Created || res.Trigger.State != nudge.StateSubmitted {
			t.Fatalf("repeat on %s: %+v, %v", m.f.Host(), res, err)
		}
	}
	if n := a.local.count("t-1"); n != 1 {
		t.Fatalf("a took t-1 %d times, want 1", n)
	}
	req.Prompt = "other"
	if _, err := d.Triggers.Submit(ctx, req); !isCode(err, nudge.IdempotencyConflict) {
		t.Fatalf("a repeat with another prompt: %v", err)
	}
	// A dialog of a's runtime answered on b is answered on a, by b's caller.
	if _, opt, err := d.Dialogs.Answer(ctx, nudge.Runtime{RuntimeID: "rt_wa.a", WorkspaceID: "wa"}, "dlg-1", "2", "op", "why"); err != nil || opt.Key != "2" {
		t.Fatalf("answer through the hub: %+v %v", opt, err)
	}
	if got := a.dialogs.answers(); !slices.Equal(got, []string{"rt_wa.a dlg-1 2 hub:b:op"}) || len(b.dialogs.answers()) != 0 {
		t.Fatalf("a answered %q, b %q", got, b.dialogs.answers())
	}
	// The fleet's runtimes: every host's.
	waitFor(t, "the other hosts' runtimes on b", func() bool { return len(b.f.Remote()) == 2 }) // rt_wh.a, rt_wa.a; not b's own
}

func isCode(err error, c nudge.Code) bool {
	var ne *nudge.Error
	return errors.As(err, &ne) && ne.Code == c
}

// TestPermissions: a member's credentials publish nothing for another member, directly
// or by having the server, the hub or a member reply onto another's subject.
func TestPermissions(t *testing.T) {
	t.Parallel()
	hub, a, _, _ := fleet(t)
	nc, err := nats.Connect("nats://"+hub.f.Addr(), nats.UserInfo("b", "secret-b"), nats.CustomInboxPrefix("_INBOX_b"),
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	for _, subj := range []string{"$KV.nudge_runtimes.a", "$KV.nudge_receipts.a.x", "$KV.nudge_ws.wa",
		triggerSubject("a", "a"), triggerSubject("a", "b"), apiSubject("a", "receipt"), ctlSubject("a", "hub", "get"),
		"$JS.API.STREAM.INFO.KV_nudge_ws", "$JS.API.DIRECT.GET.KV_nudge_runtimes.$KV.nudge_runtimes.b",
		"$JS.API.CONSUMER.CREATE.NUDGE_TRIGGERS.host_a.nudge.trig.a.*", deliverSubject("a")} {
		if _, err := nc.Request(subj, []byte(`{}`), 300*time.Millisecond); err == nil {
			t.Errorf("b was answered on %s", subj)
		}
	}
	for _, subj := range []string{"_INBOX_a.>", triggersFor("a"), deliverSubject("a"), ctlFor("a")} {
		sub, err := nc.SubscribeSync(subj)
		if err != nil {
			continue
		}
		nc.Flush()
		time.Sleep(50 * time.Millisecond)
		if !sub.IsValid() {
			continue
		}
		if err := nc.LastError(); err == nil || !strings.Contains(err.Error(), "ermissions") {
			t.Errorf("b subscribed to %s", subj)
		}
	}
	// b asks the hub and a member to answer onto a's subjects, not its own inbox.
	hubGet := nats.NewMsg(apiSubject("b", "get"))
	hubGet.Data, hubGet.Reply = []byte(`{"Host":"a","ID":"x"}`), "$KV.nudge_ws.wa"
	aGet := nats.NewMsg(ctlSubject("a", "b", "get"))
	aGet.Data, aGet.Reply = []byte(`x`), deliverSubject("a")
	for _, m := range []*nats.Msg{hubGet, aGet} {
		if err := nc.PublishMsg(m); err != nil {
			t.Fatal(err)
		}
	}
	nc.Flush()
	time.Sleep(300 * time.Millisecond)
	if h, _ := hub.f.HostOf("wa"); h != "a" {
		t.Fatalf("wa is held by %q after b's tries", h)
	}
	if n := a.local.count("x"); n != 0 {
		t.Fatalf("a took %d triggers", n)
	}
	// What b may do, it can: its own runtimes, a read.
	m, err := nc.Request(apiSubject("b", "index"), []byte(`{}`), 2*time.Second)
	if err != nil || !strings.Contains(string(m.Data), `"wa":"a"`) {
		t.Fatalf("b reads the fleet's index: %v %s", err, m.Data)
	}
}

// TestAwayHost: a trigger for a host that is away is queued with the reason; the host
// takes it once back. One whose deadline passed first fails DEFER_TIMEOUT and is never
// delivered.
func TestAwayHost(t *testing.T) {
	t.Parallel()
	hub, a, b, _ := fleet(t)
	b.f.cfg.MaxQueue = time.Second
	a.f.Close()
	time.Sleep(4 * b.f.cfg.Heartbeat) // its last beat is older than 3 beats
	waitFor(t, "a away", func() bool { _, away := hub.f.HostOf("wa"); return away })
	waitFor(t, "a away, as b knows", func() bool { _, away := b.f.HostOf("wa"); return away })
	// b cannot beat for a: not even with the server's "no responders" sent as a's beat.
	for range 5 {
		m := nats.NewMsg(ctlSubject("nobody", "b", "get"))
		m.Reply = apiSubject("a", "beat")
		b.f.nc.PublishMsg(m)
	}
	b.f.nc.Flush()
	time.Sleep(3 * b.f.cfg.Heartbeat)
	if _, away := hub.f.HostOf("wa"); !away {
		t.Fatal("a is here by b's beats")
	}
	d := deps(b)
	ctx := context.Background()
	res, err := d.Triggers.Submit(ctx, inject.Request{TriggerID: "late", Workspace: "wa", Agent: "a", Prompt: "p"})
	if err != nil || res.Trigger.State != nudge.StateQueued || !strings.Contains(res.Trigger.Message, "away") {
		t.Fatalf("queued for an away host: %+v %v", res.Trigger, err)
	}
	got, err := d.Triggers.Wait(ctx, "late", func(t nudge.Trigger) bool { return t.Closed })
	if err != nil || got.ErrorCode != nudge.DeferTimeout {
		t.Fatalf("past its deadline: %+v %v", got, err)
	}
	b.f.cfg.MaxQueue = time.Hour
	if _, err := d.Triggers.Submit(ctx, inject.Request{TriggerID: "kept", Workspace: "wa", Agent: "a", Prompt: "p"}); err != nil {
		t.Fatal(err)
	}
	back := openMember(t, a.cfg, a.ws...)
	got, err = d.Triggers.Wait(ctx, "kept", func(t nudge.Trigger) bool { return t.Closed })
	if err != nil || got.State != nudge.StateSubmitted || back.local.count("kept") != 1 {
		t.Fatalf("delivered once back: %+v %v (%d)", got, err, back.local.count("kept"))
	}
	if n := back.local.count("late"); n != 0 {
		t.Fatalf("a trigger past its deadline was delivered %d times", n)
	}
}

// newNKey makes an NKey user pair: its seed (the member's file) and public key (the hub's).
func newNKey(t *testing.T) (seed, pub string) {
	t.Helper()
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	s, _ := kp.Seed()
	p, _ := kp.PublicKey()
	return string(s), p
}
