package server

import (
	"context"
	"io"
	"net/http"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/auth"
	"github.com/nudgehq/nudge/cmd/nudge/events"
	"github.com/nudgehq/nudge/inject"
	"github.com/nudgehq/nudge/panes"
	"github.com/nudgehq/nudge/store"
)

// Fakes of the server's dependencies: function fields; a nil field panics if called
// (the guard turns that into a 500, which the test then sees).

type fakeAuth struct {
	authenticate func(p auth.Peer, h string) (auth.Caller, error)
}

var _ Authenticator = (*fakeAuth)(nil)

func (f *fakeAuth) Authenticate(p auth.Peer, h string) (auth.Caller, error) {
	return f.authenticate(p, h)
}

type fakeTokens struct {
	issue         func(c auth.Caller, req auth.IssueRequest) (string, auth.Issued, error)
	revoke        func(c auth.Caller, id string) (auth.Issued, error)
	list          func(c auth.Caller) ([]auth.Issued, error)
	rotate        func(c auth.Caller) error
	revokeRuntime func(ctx context.Context, id string)
}

var _ Tokens = (*fakeTokens)(nil)

func (f *fakeTokens) Issue(c auth.Caller, req auth.IssueRequest) (string, auth.Issued, error) {
	return f.issue(c, req)
}
func (f *fakeTokens) Revoke(c auth.Caller, id string) (auth.Issued, error) { return f.revoke(c, id) }
func (f *fakeTokens) List(c auth.Caller) ([]auth.Issued, error)            { return f.list(c) }
func (f *fakeTokens) RotateKey(c auth.Caller) error                        { return f.rotate(c) }
func (f *fakeTokens) RevokeRuntime(ctx context.Context, id string)         { f.revokeRuntime(ctx, id) }

type fakeRuntimes struct {
	list       func() []nudge.Runtime
	spawn      func(ctx context.Context, req panes.SpawnRequest) (nudge.Runtime, error)
	register   func(ctx context.Context, req panes.RegisterRequest) (nudge.Runtime, error)
	deregister func(ctx context.Context, id, reason string) error
	stop       func(ctx context.Context, id, reason string) error
	restart    func(ctx context.Context, id, reason string) (nudge.Runtime, error)
	setPaused  func(id string, paused bool, reason string) (nudge.Runtime, error)
	update     func(id string, fn func(*nudge.Runtime)) (nudge.Runtime, error)
	profile    func(name string) (panes.Profile, bool)
}

var _ Runtimes = (*fakeRuntimes)(nil)

func (f *fakeRuntimes) List() []nudge.Runtime { return f.list() }
func (f *fakeRuntimes) Get(id string) (nudge.Runtime, bool) {
	for _, rt := range f.list() {
		if rt.RuntimeID == id {
			return rt, true
		}
	}
	return nudge.Runtime{}, false
}
func (f *fakeRuntimes) Spawn(ctx context.Context, req panes.SpawnRequest) (nudge.Runtime, error) {
	return f.spawn(ctx, req)
}
func (f *fakeRuntimes) Register(ctx context.Context, req panes.RegisterRequest) (nudge.Runtime, error) {
	return f.register(ctx, req)
}
func (f *fakeRuntimes) Deregister(ctx context.Context, id, reason string) error {
	return f.deregister(ctx, id, reason)
}
func (f *fakeRuntimes) Stop(ctx context.Context, id, reason string) error {
	return f.stop(ctx, id, reason)
}
func (f *fakeRuntimes) Restart(ctx context.Context, id, reason string) (nudge.Runtime, error) {
	return f.restart(ctx, id, reason)
}
func (f *fakeRuntimes) SetPaused(id string, paused bool, reason string) (nudge.Runtime, error) {
	return f.setPaused(id, paused, reason)
}
func (f *fakeRuntimes) Update(id string, fn func(*nudge.Runtime)) (nudge.Runtime, error) {
	return f.update(id, fn)
}
func (f *fakeRuntimes) Profile(name string) (panes.Profile, bool) { return f.profile(name) }
func (f *fakeRuntimes) HostOf(string) string                      { return "" }

type fakePanes struct {
	tail func(ctx context.Context, rt nudge.Runtime, n int) ([]string, error)
}

var _ Panes = (*fakePanes)(nil)

func (f *fakePanes) Unmanaged() []panes.Stray { return nil }

func (f *fakePanes) Tail(ctx context.Context, rt nudge.Runtime, n int) (panes.Screen, error) {
	lines, err := f.tail(ctx, rt, n)
	return panes.Screen{Lines: lines}, err
}

type fakeTriggers struct {
	submit   func(ctx context.Context, req inject.Request) (inject.Submitted, error)
	get      func(id string) (nudge.Trigger, error)
	wait     func(ctx context.Context, id string, cond func(nudge.Trigger) bool) (nudge.Trigger, error)
	ack      func(ctx context.Context, id string) (nudge.Trigger, error)
	force    func(id, subject, reason, intent string) (nudge.Trigger, error)
	unblock  func(thread string, allow func(string) bool) []string
	progress func(ws, agent, thread string)
	kicked   []string
}

var _ Triggers = (*fakeTriggers)(nil)

func (f *fakeTriggers) Submit(ctx context.Context, req inject.Request) (inject.Submitted, error) {
	return f.submit(ctx, req)
}
func (f *fakeTriggers) Get(id string) (nudge.Trigger, error) { return f.get(id) }
func (f *fakeTriggers) Wait(ctx context.Context, id string, cond func(nudge.Trigger) bool) (nudge.Trigger, error) {
	return f.wait(ctx, id, cond)
}
func (f *fakeTriggers) Ack(ctx context.Context, id string) (nudge.Trigger, error) {
	return f.ack(ctx, id)
}
func (f *fakeTriggers) Depth(string) int                  { return 0 }
func (f *fakeTriggers) Kick(id string)                    { f.kicked = append(f.kicked, id) }
func (f *fakeTriggers) Progress(ws, agent, thread string) { f.progress(ws, agent, thread) }
func (f *fakeTriggers) Force(id, subject, reason, intent string) (nudge.Trigger, error) {
	return f.force(id, subject, reason, intent)
}
func (f *fakeTriggers) Unblock(thread string, allow func(string) bool) []string {
	return f.unblock(thread, allow)
}

type fakeAcks struct {
	heartbeat func(id string, at time.Time, cursor string) bool
}

var _ Acks = (*fakeAcks)(nil)

func (f *fakeAcks) Heartbeat(id string, at time.Time, cursor string) bool {
	return f.heartbeat(id, at, cursor)
}

func (f *fakeAcks) Offline(string, string) {}

// fakeStore records audit records; its lists come from function fields.
type fakeStore struct {
	audit        []nudge.AuditRecord
	listTriggers func(f store.TriggerFilter) ([]nudge.Trigger, error)
	schedules    []nudge.Schedule
}

var _ Store = (*fakeStore)(nil)

func (f *fakeStore) Flush() {}
func (f *fakeStore) GetTrigger(id string) (nudge.Trigger, error) {
	return nudge.Trigger{}, store.ErrNotFound
}
func (f *fakeStore) ListTriggers(fl store.TriggerFilter) ([]nudge.Trigger, error) {
	return f.listTriggers(fl)
}
func (f *fakeStore) AppendAudit(recs ...nudge.AuditRecord) ([]nudge.AuditRecord, error) {
	f.audit = append(f.audit, recs...)
	return recs, nil
}
func (f *fakeStore) Audit(store.AuditFilter) ([]nudge.AuditRecord, error) { return f.audit, nil }
func (f *fakeStore) VerifyAudit() (int, error)                            { return len(f.audit), nil }
func (f *fakeStore) ListSchedules() ([]nudge.Schedule, error)             { return f.schedules, nil }
func (f *fakeStore) ListRuntimes() ([]nudge.Runtime, error)               { return nil, nil }

type fakeSchedules struct {
	add    func(ws, agent, prompt string, every time.Duration) (nudge.Schedule, error)
	remove func(id string) error
}

var _ Schedules = (*fakeSchedules)(nil)

func (f *fakeSchedules) Add(ws, agent, prompt string, every time.Duration) (nudge.Schedule, error) {
	return f.add(ws, agent, prompt, every)
}
func (f *fakeSchedules) Remove(id string) error { return f.remove(id) }

type fakeEvents struct {
	serve func(w http.ResponseWriter, r *http.Request, show func(events.Event) bool) error
}

var _ Events = (*fakeEvents)(nil)

func (f *fakeEvents) Serve(w http.ResponseWriter, r *http.Request, show func(events.Event) bool) error {
	return f.serve(w, r, show)
}

type fakeMetrics struct{ text string }

func (f fakeMetrics) WritePrometheus(w io.Writer) error {
	_, err := io.WriteString(w, f.text)
	return err
}
