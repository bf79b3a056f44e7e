package inject

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/panes"
	"github.com/nudgehq/nudge/store"
)

// noRuntimes is a Runtimes with no runtime.
type noRuntimes struct{}

func (noRuntimes) Get(string) (nudge.Runtime, bool)            { return nudge.Runtime{}, false }
func (noRuntimes) Lookup(string, string) (nudge.Runtime, bool) { return nudge.Runtime{}, false }
func (noRuntimes) Update(string, func(*nudge.Runtime)) (nudge.Runtime, error) {
	return nudge.Runtime{}, store.ErrNotFound
}
func (noRuntimes) Transition(string, nudge.Status, string) (nudge.Runtime, error) {
	return nudge.Runtime{}, store.ErrNotFound
}
func (noRuntimes) Profile(string) (panes.Profile, bool) { return panes.Profile{}, false }

var _ Runtimes = noRuntimes{}

// fakeAcker is an Acker whose APIAck answers apiAck.
type fakeAcker struct{ apiAck func(id string) bool }

func (fakeAcker) Expect(nudge.Trigger)                         {}
func (fakeAcker) Wait(context.Context, string) (string, error) { return "", errors.New("no") }
func (fakeAcker) Forget(string)                                {}
func (fakeAcker) OnScreen(string, string, []string) bool       { return false }
func (a fakeAcker) APIAck(id string) bool                      { return a.apiAck(id) }

var _ Acker = fakeAcker{}

// newWaitPipeline returns an unopened pipeline on a fresh store holding trigs.
func newWaitPipeline(t *testing.T, acks Acker, trigs ...nudge.Trigger) *Pipeline {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "nudge.db"), store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for _, tr := range trigs {
		if _, _, err := db.Triggers().CreateTrigger(tr, nil); err != nil {
			t.Fatal(err)
		}
	}
	p, err := New(Config{}, Deps{Store: db, Runtimes: noRuntimes{}, Acks: acks,
		Conn: func(string) (Sender, error) { return nil, errors.New("no tmux") }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// record updates trigger id in the store as a lane would, and announces the change.
func record(t *testing.T, p *Pipeline, id string, fn func(*nudge.Trigger)) {
	got, err := p.deps.Store.Triggers().UpdateTrigger(id, func(tr *nudge.Trigger) error { fn(tr); return nil })
	if err != nil {
		t.Error(err)
		return
	}
	p.changed(got)
}

// waiting blocks until someone Waits on trigger id. It runs on goroutines of its own,
// so it reports a timeout with t.Error.
func waiting(t *testing.T, p *Pipeline, id string) {
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		p.waiters.mu.Lock()
		w := p.waiters.m[id]
		p.waiters.mu.Unlock()
		if w != nil {
			return
		}
	}
	t.Errorf("timed out waiting for a waiter on %s", id)
}

func TestWaitWakesOnChange(t *testing.T) {
	p := newWaitPipeline(t, nil, nudge.Trigger{TriggerID: "t1", State: nudge.StateSubmitted})
	go func() {
		waiting(t, p, "t1")
		record(t, p, "t1", func(tr *nudge.Trigger) { tr.State = nudge.StateInjected }) // not yet
		record(t, p, "t1", func(tr *nudge.Trigger) { tr.State, tr.Closed = nudge.StateAcked, true })
	}()
	// The deadline only bounds a broken test: Wait returns on the change, not by polling.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	got, err := p.Wait(ctx, "t1", func(tr nudge.Trigger) bool { return tr.Closed })
	if err != nil || !got.Closed || got.State != nudge.StateAcked {
		t.Fatalf("Wait: got %s closed=%v, %v; want acked, closed", got.State, got.Closed, err)
	}
	if n := len(p.waiters.m); n != 0 {
		t.Errorf("%d watches left after Wait", n)
	}
}

func TestWaitContextEnds(t *testing.T) {
	p := newWaitPipeline(t, nil, nudge.Trigger{TriggerID: "t1", State: nudge.StateQueued})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { waiting(t, p, "t1"); cancel() }()
	got, err := p.Wait(ctx, "t1", func(tr nudge.Trigger) bool { return tr.Closed })
	if !errors.Is(err, context.Canceled) || got.TriggerID != "t1" || got.State != nudge.StateQueued {
		t.Fatalf("Wait: got %+v, %v; want the queued record and context.Canceled", got, err)
	}
	if _, err := p.Wait(context.Background(), "missing", func(nudge.Trigger) bool { return false }); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Wait on a missing trigger: got %v, want ErrNotFound", err)
	}
	if n := len(p.waiters.m); n != 0 {
		t.Errorf("%d watches left after Wait", n)
	}
}

// TestAck: the one decision an explicit ack goes through.
func TestAck(t *testing.T) {
	trigs := []nudge.Trigger{
		{TriggerID: "acked", State: nudge.StateAcked, Closed: true},
		{TriggerID: "waiting", State: nudge.StateSubmitted},
		{TriggerID: "fellback", State: nudge.StateSubmitted, Fallback: nudge.BackendResume},
		{TriggerID: "queued", State: nudge.StateQueued},
	}
	var p *Pipeline
	acks := fakeAcker{apiAck: func(id string) bool {
		if id != "waiting" {
			return false
		}
		go record(t, p, id, func(tr *nudge.Trigger) { tr.State, tr.AckSignal = nudge.StateAcked, "api" }) // the lane
		return true
	}}
	p = newWaitPipeline(t, acks, trigs...)
	ctx := context.Background()

	t.Run("OK", func(t *testing.T) {
		for _, id := range []string{"acked", "waiting", "fellback"} {
			got, err := p.Ack(ctx, id)
			if err != nil || got.State != nudge.StateAcked {
				t.Errorf("%s: got %s, %v; want acked", id, got.State, err)
			}
		}
		if got, _ := p.Get("fellback"); got.AckSignal != "api" || got.AckedAt == nil {
			t.Errorf("fallback ack recorded as %q at %v, want api and a time", got.AckSignal, got.AckedAt)
		}
	})
	t.Run("ErrConflict", func(t *testing.T) {
		_, err := p.Ack(ctx, "queued")
		var ne *nudge.Error
		if !errors.As(err, &ne) || ne.Code != nudge.Conflict {
			t.Fatalf("got %v, want a CONFLICT error", err)
		}
		if want := "trigger queued is queued: not awaiting an ack"; ne.Message != want {
			t.Errorf("message %q, want %q", ne.Message, want)
		}
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		if _, err := p.Ack(ctx, "missing"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("got %v, want ErrNotFound", err)
		}
	})
}
