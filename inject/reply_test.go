package inject

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/store"
)

// countChanges counts the receipt changes a pipeline publishes (nudge.TriggerChanged).
func countChanges(t *testing.T, p *Pipeline) func() int {
	b := nudge.NewBus()
	t.Cleanup(b.Close)
	p.deps.Bus = b
	c := nudge.NewClient(b, "test", 16)
	var mu sync.Mutex
	n := 0
	nudge.Subscribe(c, func(nudge.TriggerChanged) { mu.Lock(); n++; mu.Unlock() })
	type flush chan struct{}
	nudge.Subscribe(c, func(f flush) { close(f) })
	return func() int {
		f := make(flush)
		nudge.Publish(b, f)
		<-f // every change published before it is counted
		mu.Lock()
		defer mu.Unlock()
		return n
	}
}

func replyAudits(t *testing.T, p *Pipeline, id string) []nudge.AuditRecord {
	t.Helper()
	recs, err := p.deps.Store.AuditLog().Audit(store.AuditFilter{TriggerID: id, Event: "reply_received"})
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// TestReplyClosedTrigger: the common case, a reply for an acked trigger the pipeline
// already forgot: the store copy gains it once, with its audit record; the record read
// again writes nothing.
func TestReplyClosedTrigger(t *testing.T) {
	acked := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	p := newWaitPipeline(t, nil, nudge.Trigger{TriggerID: "t1", WorkspaceID: "ws", Agent: "rev", RuntimeID: "rt_ws.rev",
		State: nudge.StateAcked, Result: nudge.ResultDelivered, AckedAt: &acked, Closed: true, Caller: "orch", CallerUID: 7})
	changes := countChanges(t, p)
	ended := acked.Add(3 * time.Second)
	ok, err := p.Reply(nudge.ReplyRead{RuntimeID: "rt_ws.rev", TriggerID: "t1", Text: "The answer is 42.\nSecond line.", EndedAt: ended, Evidence: "rollout.jsonl:17"})
	if !ok || err != nil {
		t.Fatalf("Reply: %v, %v; want recorded", ok, err)
	}
	got, err := p.Get("t1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Reply != "The answer is 42.\nSecond line." || got.ReplyTruncated || got.TurnEndedAt == nil || !got.TurnEndedAt.Equal(ended) {
		t.Errorf("receipt: reply %q truncated %v ended %v; want the text, not truncated, ended %v", got.Reply, got.ReplyTruncated, got.TurnEndedAt, ended)
	}
	if got.State != nudge.StateAcked || got.Result != nudge.ResultDelivered || !got.Closed {
		t.Errorf("receipt moved: %s %s closed=%v; want acked delivered closed", got.State, got.Result, got.Closed)
	}
	audits := replyAudits(t, p, "t1")
	if len(audits) != 1 || audits[0].RuntimeID != "rt_ws.rev" || audits[0].Subject != "orch" ||
		!strings.Contains(string(audits[0].Detail), `"evidence":"rollout.jsonl:17"`) {
		t.Errorf("audit: %+v; want one reply_received record with the evidence", audits)
	}
	if n := changes(); n != 1 {
		t.Errorf("TriggerChanged published %d times, want 1", n)
	}

	// The first reply is kept: a later one changes nothing, not even updated_at.
	ok, err = p.Reply(nudge.ReplyRead{RuntimeID: "rt_ws.rev", TriggerID: "t1", Text: "another turn", EndedAt: ended.Add(time.Minute)})
	if ok || err != nil {
		t.Fatalf("second Reply: %v, %v; want not recorded, no error", ok, err)
	}
	if again, _ := p.Get("t1"); again.Reply != got.Reply || !again.TurnEndedAt.Equal(ended) || !again.UpdatedAt.Equal(got.UpdatedAt) {
		t.Errorf("second reply changed the receipt: %q at %v, updated %v (was %v)", again.Reply, again.TurnEndedAt, again.UpdatedAt, got.UpdatedAt)
	}
	if n := len(replyAudits(t, p, "t1")); n != 1 {
		t.Errorf("%d reply audit records after a second reply, want 1", n)
	}
	if n := changes(); n != 1 {
		t.Errorf("a second reply announced: TriggerChanged published %d times", n)
	}
	if ok, err := p.Reply(nudge.ReplyRead{RuntimeID: "rt_ws.rev", TriggerID: "missing", Text: "x"}); ok || !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown trigger: %v, %v; want ErrNotFound", ok, err)
	}
}

// TestReplyInFlight: a trigger still in the pipeline's memory (submitted, its ack not
// recorded yet: the record can be ahead of the screen) gains the reply there; its store
// copy follows, and its ack keeps it.
func TestReplyInFlight(t *testing.T) {
	p := newWaitPipeline(t, nil, nudge.Trigger{TriggerID: "t1", State: nudge.StateSubmitted, RuntimeID: "rt"})
	changes := countChanges(t, p)
	stored, err := p.deps.Store.Triggers().GetTrigger("t1")
	if err != nil {
		t.Fatal(err)
	}
	j := newJob(stored, false)
	close(j.created)
	p.mu.Lock()
	p.jobs["t1"] = j
	p.mu.Unlock()

	if ok, err := p.Reply(nudge.ReplyRead{RuntimeID: "rt", TriggerID: "t1", Text: "done", Truncated: true, Evidence: "session.jsonl:3"}); !ok || err != nil {
		t.Fatalf("Reply: %v, %v", ok, err)
	}
	if got := j.record(); got.Reply != "done" || !got.ReplyTruncated || got.TurnEndedAt == nil || got.State != nudge.StateSubmitted {
		t.Errorf("in memory: %+v; want the reply, truncated as the reader said, still submitted", got)
	}
	before := j.record().UpdatedAt
	if ok, err := p.Reply(nudge.ReplyRead{RuntimeID: "rt", TriggerID: "t1", Text: "later"}); ok || err != nil || j.record().Reply != "done" || !j.record().UpdatedAt.Equal(before) {
		t.Errorf("second Reply in flight: %v, %v, %q; want the first kept untouched", ok, err, j.record().Reply)
	}
	p.deps.Store.Flush()
	if got, err := p.deps.Store.Triggers().GetTrigger("t1"); err != nil || got.Reply != "done" || got.TurnEndedAt == nil {
		t.Errorf("store copy: %+v, %v; want the reply", got, err)
	}
	if n := len(replyAudits(t, p, "t1")); n != 1 {
		t.Errorf("%d reply audit records, want 1", n)
	}
	if n := changes(); n != 1 {
		t.Errorf("TriggerChanged published %d times, want 1", n)
	}
	rec := j.update(p.cfg.Now(), func(t *nudge.Trigger) { t.State, t.Closed = nudge.StateAcked, true })
	if rec.Reply != "done" || rec.TurnEndedAt == nil {
		t.Errorf("the ack lost the reply: %+v", rec)
	}
}

// TestReplyForgottenMeanwhile: a waiter that reads the receipt after its job was
// forgotten but before the reply's write is in the store still gets the reply.
func TestReplyForgottenMeanwhile(t *testing.T) {
	p := newWaitPipeline(t, nil, nudge.Trigger{TriggerID: "t1", RuntimeID: "rt", State: nudge.StateAcked, Closed: true})
	stored, _ := p.deps.Store.Triggers().GetTrigger("t1")
	j := newJob(stored, false)
	close(j.created)
	p.mu.Lock()
	p.jobs["t1"] = j
	p.mu.Unlock()
	// The job is forgotten as the reply's change is announced: the waiter then reads
	// the store, whose copy may not have the reply yet.
	b := nudge.NewBus()
	defer b.Close()
	p.deps.Bus = b
	nudge.Subscribe(nudge.NewClient(b, "test", 1), func(ev nudge.TriggerChanged) {
		if ev.Trigger.TurnEndedAt != nil {
			p.mu.Lock()
			delete(p.jobs, "t1")
			p.mu.Unlock()
		}
	})
	replied := make(chan struct{})
	go func() {
		defer close(replied)
		waiting(t, p, "t1")
		if ok, err := p.Reply(nudge.ReplyRead{RuntimeID: "rt", TriggerID: "t1", Text: "hello"}); !ok || err != nil {
			t.Errorf("Reply: %v, %v", ok, err)
		}
	}()
	defer func() { <-replied }()
	// The deadline only bounds a broken test: Wait returns on the change.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	got, err := p.Wait(ctx, "t1", func(tr nudge.Trigger) bool { return tr.TurnEndedAt != nil })
	if err != nil || got.Reply != "hello" {
		t.Fatalf("Wait: got %q, %v; want the reply", got.Reply, err)
	}
}

// TestReplyBounded: the receipt keeps a redacted reply of at most MaxReply bytes, cut on
// a rune boundary.
func TestReplyBounded(t *testing.T) {
	secret := "sk-ant-" + strings.Repeat("A1b2", 10)
	long := "key " + secret + " " + strings.Repeat("é", MaxReply) // 2 bytes a rune: an odd cut lands mid-rune
	p := newWaitPipeline(t, nil, nudge.Trigger{TriggerID: "long", RuntimeID: "rt", State: nudge.StateAcked, Closed: true})
	if ok, err := p.Reply(nudge.ReplyRead{RuntimeID: "rt", TriggerID: "long", Text: long}); !ok || err != nil {
		t.Fatal(ok, err)
	}
	got, _ := p.Get("long")
	if len(got.Reply) > MaxReply || len(got.Reply) < MaxReply-utf8.UTFMax || !utf8.ValidString(got.Reply) || !got.ReplyTruncated {
		t.Errorf("long reply: %d bytes, valid %v, truncated %v; want at most %d valid bytes, truncated",
			len(got.Reply), utf8.ValidString(got.Reply), got.ReplyTruncated, MaxReply)
	}
	if strings.Contains(got.Reply, secret) || !strings.HasPrefix(got.Reply, "key "+nudge.Redacted) {
		t.Errorf("reply not redacted: %.60q", got.Reply)
	}
	for _, n := range []int{0, 1, MaxReply - 1, MaxReply, MaxReply + 1, MaxReply + 2} {
		s, cut := clipReply(strings.Repeat("€", n/3+1)[:n]) // 3 bytes a rune
		if len(s) > MaxReply || len(s) < min(n, MaxReply)-2 || cut != (n > MaxReply) || (cut && !utf8.ValidString(s)) {
			t.Errorf("clipReply of %d bytes: %d bytes, cut %v", n, len(s), cut)
		}
	}
}

// TestReplyOnlyForItsRuntime: an agent writes into its own record the envelope of a
// trigger that is not its own (another runtime's of its workspace, one of another
// workspace) or of one of its own still queued, and ends the turn: none of them takes
// that reply, and the genuine reply, read later from the right runtime's record, is kept.
func TestReplyOnlyForItsRuntime(t *testing.T) {
	acked := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	p := newWaitPipeline(t, nil,
		nudge.Trigger{TriggerID: "same-ws", WorkspaceID: "ws", RuntimeID: "rt_ws.b", State: nudge.StateAcked, AckedAt: &acked, Closed: true},
		nudge.Trigger{TriggerID: "other-ws", WorkspaceID: "ws2", RuntimeID: "rt_ws2.c", State: nudge.StateSubmitted, SubmittedAt: &acked},
		nudge.Trigger{TriggerID: "own-queued", WorkspaceID: "ws", RuntimeID: "rt_ws.a", State: nudge.StateQueued},
		nudge.Trigger{TriggerID: "fell-back", WorkspaceID: "ws", RuntimeID: "rt_ws.b", FallbackRuntimeID: "rt_ws.b-fb-1",
			State: nudge.StateSubmitted, SubmittedAt: &acked, Fallback: nudge.BackendSpawn, Closed: true},
	)
	changes := countChanges(t, p)
	for _, id := range []string{"same-ws", "other-ws", "own-queued", "fell-back"} {
		if ok, err := p.Reply(nudge.ReplyRead{RuntimeID: "rt_ws.a", TriggerID: id, Text: "forged by rt_ws.a", Evidence: "a.jsonl:9"}); ok || err != nil {
			t.Errorf("%s: rt_ws.a's record set the reply: %v, %v", id, ok, err)
		}
		if got, _ := p.Get(id); got.Reply != "" || got.TurnEndedAt != nil {
			t.Errorf("%s: reply %q from another runtime's record", id, got.Reply)
		}
		if n := len(replyAudits(t, p, id)); n != 0 {
			t.Errorf("%s: %d reply audit records", id, n)
		}
	}
	if n := changes(); n != 0 {
		t.Errorf("forged replies announced %d changes", n)
	}
	// The genuine replies: from the runtime the trigger was sent to, or the one its
	// fallback launched it in.
	for id, rt := range map[string]string{"same-ws": "rt_ws.b", "other-ws": "rt_ws2.c", "fell-back": "rt_ws.b-fb-1"} {
		if ok, err := p.Reply(nudge.ReplyRead{RuntimeID: rt, TriggerID: id, Text: "genuine"}); !ok || err != nil {
			t.Errorf("%s: the genuine reply from %s: %v, %v", id, rt, ok, err)
		}
		if got, _ := p.Get(id); got.Reply != "genuine" {
			t.Errorf("%s: reply %q, want the genuine one", id, got.Reply)
		}
	}
}
