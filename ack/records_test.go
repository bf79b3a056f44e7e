package ack

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/ack/record"
)

// fakeReader is a Reader fed by the test.
type fakeReader struct {
	ch   chan record.Event
	once sync.Once
}

func (f *fakeReader) Events() <-chan record.Event { return f.ch }
func (f *fakeReader) Path() string                { return "/rec.jsonl" }
func (f *fakeReader) Err() error                  { return nil }
func (f *fakeReader) Close() error                { f.once.Do(func() { close(f.ch) }); return nil }

func TestEnvelopeIDs(t *testing.T) {
	tests := []struct {
		text string
		want []string
	}{
		{"[BRIDGE_TRIGGER id=a1 thread=- reason=trigger] hi [/BRIDGE_TRIGGER]", []string{"a1"}},
		{"[BRIDGE_TRIGGER id=a1 thread=t reason=r]\nx\n[/BRIDGE_TRIGGER]\n[BRIDGE_TRIGGER id=b2 thread=- reason=r] y [/BRIDGE_TRIGGER]", []string{"a1", "b2"}},
		{"quote: [BRIDGE_TRIGGER id=c3 thread=- reason=r]", nil}, // not at a line start
		// OpenCode glues a prompt typed while it takes in the previous one to its end.
		{"[BRIDGE_TRIGGER id=a1 thread=- reason=r] x [/BRIDGE_TRIGGER][BRIDGE_TRIGGER id=b2 thread=- reason=r]\ny\n[/BRIDGE_TRIGGER] [BRIDGE_TRIGGER id=c3 thread=- reason=r] z [/BRIDGE_TRIGGER]", []string{"a1", "b2", "c3"}},
		{"[BRIDGE_TRIGGER id=a1 thread=- reason=r] x [/BRIDGE_TRIGGER] and [BRIDGE_TRIGGER id=b2 thread=- reason=r]", []string{"a1"}}, // text between
		{"say [/BRIDGE_TRIGGER[BRIDGE_TRIGGER id=b2 thread=- reason=r]", nil},
		{"no envelope", nil},
		{"[BRIDGE_TRIGGER id=", nil},
	}
	for _, tt := range tests {
		if got := EnvelopeIDs(tt.text); !slices.Equal(got, tt.want) {
			t.Errorf("EnvelopeIDs(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
}

// TestRecordsTurn: a user message with two envelopes (a CLI joined its queue) acks both
// and names the evidence; the turn's answer comes back as the reply of both; a reply's
// text that looks like an envelope acks nothing.
func TestRecordsTurn(t *testing.T) {
	fr := &fakeReader{ch: make(chan record.Event, 16)}
	var mu sync.Mutex
	prompts := map[string]string{}
	replies := map[string]nudge.ReplyRead{}
	var session string
	got := make(chan struct{}, 16)
	rs := newRecords(testSink{
		Open: func(record.Format, record.Spec) record.Reader { return fr },
		OnPrompt: func(rt, id, ev string) RecordOwner {
			mu.Lock()
			prompts[id] = ev
			mu.Unlock()
			return RecordMine
		},
		OnReply: func(rt, id string, r nudge.ReplyRead) {
			mu.Lock()
			replies[id] = r
			mu.Unlock()
			got <- struct{}{}
		},
		OnSession: func(rt, s string) { session = s },
	})
	defer rs.Close()
	rs.Follow("w.a", nil, record.Spec{})
	at := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	fr.ch <- record.Event{Kind: record.SessionKnown, SessionID: "s1", File: "/rec.jsonl", Line: 1}
	fr.ch <- record.Event{Kind: record.UserMessage, Text: "[BRIDGE_TRIGGER id=t1 thread=- reason=r] one [/BRIDGE_TRIGGER]\n[BRIDGE_TRIGGER id=t2 thread=- reason=r] two [/BRIDGE_TRIGGER]", File: "/rec.jsonl", Line: 2}
	fr.ch <- record.Event{Kind: record.TurnStarted, File: "/rec.jsonl", Line: 2}
	fr.ch <- record.Event{Kind: record.AssistantText, Text: "first part", File: "/rec.jsonl", Line: 3}
	fr.ch <- record.Event{Kind: record.AssistantText, Text: "[BRIDGE_TRIGGER id=t9 thread=- reason=r] forged", File: "/rec.jsonl", Line: 4}
	deadline := time.Now().Add(5 * time.Second)
	for !rs.Working("w.a") && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if !rs.Working("w.a") || !rs.Live("w.a") {
		t.Fatal("the open turn is not seen")
	}
	fr.ch <- record.Event{Kind: record.TurnEnded, At: at, File: "/rec.jsonl", Line: 5}
	<-got
	<-got
	if rs.Working("w.a") {
		t.Fatal("working after the turn ended")
	}
	mu.Lock()
	defer mu.Unlock()
	if prompts["t1"] != "/rec.jsonl:2" || prompts["t2"] != "/rec.jsonl:2" || len(prompts) != 2 {
		t.Fatalf("prompts %v", prompts)
	}
	for _, id := range []string{"t1", "t2"} {
		r := replies[id]
		if !strings.HasPrefix(r.Text, "first part\n\n") || !r.EndedAt.Equal(at) || r.Evidence != "/rec.jsonl:5" {
			t.Fatalf("%s reply %+v", id, r)
		}
	}
	if ev, ok := rs.Has("w.a", "t2"); !ok || ev != "/rec.jsonl:2" {
		t.Fatalf("Has t2: %q %v", ev, ok)
	}
	if _, ok := rs.Has("w.a", "t9"); ok {
		t.Fatal("a reply's text counted as a prompt")
	}
	if session != "s1" {
		t.Fatalf("session %q", session)
	}
}

// TestReplyBounded: a reply longer than record.MaxText is cut on a rune boundary and
// marked truncated.
func TestReplyBounded(t *testing.T) {
	var tr turnReply
	tr.add(strings.Repeat("é", record.MaxText/2-1), false)
	tr.add("ééé", false)
	if s := tr.b.String(); len(s) > record.MaxText || !tr.truncated || !strings.HasSuffix(s, "é") && !strings.HasSuffix(s, "\n") {
		t.Fatalf("len %d truncated %v", len(s), tr.truncated)
	}
}

// TestTrackerRecordAck: a prompt seen in the record before its wait began (a daemon
// restarted after typing it) is acked when the wait begins, with its evidence; one seen
// while it waits is acked then, queued or not.
func TestTrackerRecordAck(t *testing.T) {
	k := NewTracker(TrackerConfig{})
	if k.RecordAck("w.a", "early", "/r:1") != RecordUnknown {
		t.Fatal("acked a trigger nobody waits for")
	}
	k.Expect(typed(trig("early", "w.a")))
	if sig, err := k.Wait(t.Context(), "early"); err != nil || sig != SignalRecord || k.Evidence("early") != "/r:1" {
		t.Fatalf("early: %q %v %q", sig, err, k.Evidence("early"))
	}
	k.Expect(trig("late", "w.a"))
	k.Handed("w.a", "late")
	k.Queued("late")
	if k.RecordAck("w.a", "late", "/r:7") != RecordMine {
		t.Fatal("late not acked")
	}
	if sig, err := k.Wait(t.Context(), "late"); err != nil || sig != SignalRecord {
		t.Fatalf("late: %q %v", sig, err)
	}
	// Another runtime's record (two agents in one directory) acks nothing of this one's.
	k.Expect(trig("other", "w.a"))
	if k.RecordAck("w.b", "other", "/r:9") != RecordForeign {
		t.Fatal("acked by another runtime's record")
	}
	k.RecordAck("w.b", "early2", "/r:10")
	k.Expect(typed(trig("early2", "w.a")))
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if _, err := k.Wait(ctx, "early2"); err == nil {
		t.Fatal("acked at Expect by another runtime's record")
	}
}

func trig(id, rt string) nudge.Trigger { return nudge.Trigger{TriggerID: id, RuntimeID: rt} }

// typed is t as its record reads once it was typed into its runtime.
func typed(t nudge.Trigger) nudge.Trigger {
	at := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	t.State, t.InjectedAt = nudge.StateInjected, &at
	return t
}

// TestTrackerForgedBeforeHanded: the agent writes a trigger's envelope into its own record,
// or prints its marker, before that trigger was handed to it (queued, deferred: it guessed
// the id). Nothing acks it: not the record line (before or during its wait), not the
// marker, not a heartbeat, not the same line at a later Expect; once handed, the genuine
// prompt in the record and the marker ack it.
func TestTrackerForgedBeforeHanded(t *testing.T) {
	k := NewTracker(TrackerConfig{})
	notAcked := func(id, why string) {
		t.Helper()
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if sig, err := k.Wait(ctx, id); err == nil {
			t.Fatalf("%s: acked by %s", why, sig)
		}
	}
	// Before its wait: remembered, but Handed forgets it, and Expect after typing does not
	// take it.
	if k.RecordAck("w.a", "q1", "/r:3") != RecordUnknown {
		t.Fatal("q1 acked before anything waits on it")
	}
	k.Expect(trig("q1", "w.a")) // the pipeline's wait begins just before typing
	notAcked("q1", "Expect of a queued trigger")
	k.Handed("w.a", "q1")
	k.Expect(typed(trig("q1", "w.a")))
	notAcked("q1", "a record line written before q1 was handed")
	// During its wait but before it is handed: a record line, a marker, a heartbeat.
	k.Expect(trig("q2", "w.a"))
	if k.RecordAck("w.a", "q2", "/r:4") != RecordUnknown {
		t.Fatal("q2's forged line counted as this runtime's prompt")
	}
	k.Feed("w.a", []byte("ok "+Marker+"q2\n"))
	k.Heartbeat("w.a", time.Now().Add(time.Hour), "cursor-1")
	notAcked("q2", "a line, a marker and a heartbeat before q2 was handed")
	k.Handed("w.a", "q2")
	k.Expect(typed(trig("q2", "w.a")))
	notAcked("q2", "the forged line at the wait after typing")
	// Handed: the genuine prompt in the record acks it.
	if k.RecordAck("w.a", "q2", "/r:9") != RecordMine {
		t.Fatal("q2's genuine prompt not taken")
	}
	if sig, err := k.Wait(t.Context(), "q2"); err != nil || sig != SignalRecord || k.Evidence("q2") != "/r:9" {
		t.Fatalf("q2: %q %v %q", sig, err, k.Evidence("q2"))
	}
	// Handed to another runtime: neither this runtime's marker nor its record ack it.
	k.Expect(trig("b1", "w.b"))
	k.Handed("w.b", "b1")
	k.Feed("w.a", []byte(Marker+"b1\n"))
	if k.RecordAck("w.a", "b1", "/r:10") != RecordForeign {
		t.Fatal("another runtime's trigger taken from this runtime's record")
	}
	notAcked("b1", "another runtime's marker and record")
	k.Feed("w.b", []byte(Marker+"b1\n"))
	if sig, err := k.Wait(t.Context(), "b1"); err != nil || sig != SignalMarker {
		t.Fatalf("b1 by its own runtime's marker: %q %v", sig, err)
	}
}

// TestRecordsForeignPartPassedOver: a record spanning several sessions (OpenCode's of one
// directory) whose later part shows another runtime's prompt is followed again without
// that part, even after this runtime's own prompts were seen in it; a foreign prompt in
// the reader's own file, once its own were seen, is not (two agents cannot share a file).
func TestRecordsForeignPartPassedOver(t *testing.T) {
	fr := &fakeReader{ch: make(chan record.Event, 16)}
	foreign := make(chan string, 4)
	rs := newRecords(testSink{
		Open: func(record.Format, record.Spec) record.Reader { return fr },
		OnPrompt: func(rt, id, ev string) RecordOwner {
			if strings.HasPrefix(id, "other") {
				return RecordForeign
			}
			return RecordMine
		},
		OnForeign: func(rt, path string) { foreign <- path },
	})
	defer rs.Close()
	rs.Follow("w.a", nil, record.Spec{})
	fr.ch <- record.Event{Kind: record.UserMessage, Text: "[BRIDGE_TRIGGER id=mine1 thread=- reason=r] x [/BRIDGE_TRIGGER]", File: "/rec.jsonl", Line: 1}
	fr.ch <- record.Event{Kind: record.UserMessage, Text: "[BRIDGE_TRIGGER id=other1 thread=- reason=r] y [/BRIDGE_TRIGGER]", File: "/rec.jsonl", Line: 2}
	fr.ch <- record.Event{Kind: record.UserMessage, Text: "[BRIDGE_TRIGGER id=other2 thread=- reason=r] z [/BRIDGE_TRIGGER]", File: "/rec.jsonl#ses_b", Line: 3}
	select {
	case p := <-foreign:
		if p != "/rec.jsonl#ses_b" {
			t.Fatalf("passed over %q, want the other session", p)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the other runtime's session was not passed over")
	}
	select {
	case p := <-foreign:
		t.Fatalf("passed over %q too", p)
	case <-time.After(100 * time.Millisecond):
	}
}

// TestEnvelopeIDsOpenCodeMerged: OpenCode 1.18.33's record of three prompts, the second
// and third typed while it was still taking in the first, as one user message: each of
// the three is in the agent's hands.
func TestEnvelopeIDsOpenCodeMerged(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("record", "testdata", "opencode-1.18.33-merged.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var st record.State
	var ids []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		st.Line++
		evs, err := record.OpenCode{}.Parse(nil, &st, []byte(l))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			if e.Kind == record.UserMessage {
				ids = append(ids, EnvelopeIDs(e.Text)...)
			}
		}
	}
	if want := []string{"opencode-000-at-path", "opencode-001-semicolon", "opencode-002-quotes"}; !slices.Equal(ids, want) {
		t.Fatalf("ids %q, want %q", ids, want)
	}
}

// syncReader is a fakeReader whose record holds a prompt it has not reported yet: a Sync
// reads it (its UserMessage, then the Synced answer), unless mute.
type syncReader struct {
	fakeReader
	unseen string
	mute   bool
}

func (s *syncReader) Sync(n uint64) {
	if s.mute {
		return
	}
	go func() {
		if s.unseen != "" {
			s.ch <- record.Event{Kind: record.UserMessage, Text: s.unseen, File: "/rec.db#k", Line: 9}
		}
		s.ch <- record.Event{Kind: record.Synced, Seq: n}
	}()
}

// TestRecordsSync: Sync returns once the record's read to its end is known: a prompt it
// holds is acked (and Has) by then; a reader that does not answer leaves it to ctx; a
// runtime not followed returns at once.
func TestRecordsSync(t *testing.T) {
	sr := &syncReader{fakeReader: fakeReader{ch: make(chan record.Event, 16)},
		unseen: "[BRIDGE_TRIGGER id=t1 thread=- reason=r] one [/BRIDGE_TRIGGER]"}
	var mu sync.Mutex
	acked := map[string]string{}
	rs := newRecords(testSink{
		Open: func(record.Format, record.Spec) record.Reader { return sr },
		OnPrompt: func(rt, id, ev string) RecordOwner {
			mu.Lock()
			acked[id] = ev
			mu.Unlock()
			return RecordMine
		},
	})
	defer rs.Close()
	rs.Follow("w.a", nil, record.Spec{})
	if err := rs.Sync(context.Background(), "w.a"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	ev := acked["t1"]
	mu.Unlock()
	if ev != "/rec.db#k:9" {
		t.Fatalf("after Sync: acked %q", ev)
	}
	if ev, ok := rs.Has("w.a", "t1"); !ok || ev != "/rec.db#k:9" {
		t.Fatalf("Has t1 after Sync: %q %v", ev, ok)
	}
	sr.mute = true
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := rs.Sync(ctx, "w.a"); err == nil {
		t.Fatal("a Sync the reader never answers returned without ctx's error")
	}
	if err := rs.Sync(context.Background(), "w.other"); err != nil {
		t.Fatal(err)
	}
}

// TestRecordsQueuedReply: where the record names the message a turn answers (OpenCode), a
// prompt queued while a turn runs gets its own turn's reply, not the running one's.
func TestRecordsQueuedReply(t *testing.T) {
	fr := &fakeReader{ch: make(chan record.Event, 16)}
	var mu sync.Mutex
	replies := map[string]string{}
	got := make(chan struct{}, 16)
	rs := newRecords(testSink{
		Open:     func(record.Format, record.Spec) record.Reader { return fr },
		OnPrompt: func(rt, id, ev string) RecordOwner { return RecordMine },
		OnReply: func(rt, id string, r nudge.ReplyRead) {
			mu.Lock()
			replies[id] = r.Text
			mu.Unlock()
			got <- struct{}{}
		},
	})
	defer rs.Close()
	rs.Follow("w.a", nil, record.Spec{})
	env := func(id string) string { return "[BRIDGE_TRIGGER id=" + id + " thread=- reason=r] x [/BRIDGE_TRIGGER]" }
	for _, e := range []record.Event{
		{Kind: record.UserMessage, Text: env("t1"), Turn: "u1"},
		{Kind: record.TurnStarted, Turn: "u1"},
		{Kind: record.UserMessage, Text: env("t2"), Turn: "u2"}, // queued meanwhile
		{Kind: record.AssistantText, Text: "answer one", Turn: "u1"},
		{Kind: record.TurnEnded, Turn: "u1"},
		{Kind: record.TurnStarted, Turn: "u2"},
		{Kind: record.AssistantText, Text: "answer two", Turn: "u2"},
		{Kind: record.TurnEnded, Turn: "u2"},
	} {
		e.File, e.Line = "/rec.db#k", 1
		fr.ch <- e
	}
	<-got
	<-got
	mu.Lock()
	defer mu.Unlock()
	if replies["t1"] != "answer one" || replies["t2"] != "answer two" {
		t.Fatalf("replies %q", replies)
	}
}

// TestRecordsSessionPinned: a record's session id is reported only once a prompt of this
// runtime's shows the record is its own, and only the id its file named first: an agent
// that rewrites its record's header to name another session (another workspace's) moves
// nothing. Another file (a database's other session key) may name its own, once a prompt
// of this runtime's is seen in it.
func TestRecordsSessionPinned(t *testing.T) {
	fr := &fakeReader{ch: make(chan record.Event, 16)}
	sessions := make(chan string, 8)
	prompts := make(chan string, 16)
	rs := newRecords(testSink{
		Open: func(record.Format, record.Spec) record.Reader { return fr },
		OnPrompt: func(rt, id, ev string) RecordOwner {
			prompts <- id
			if strings.HasPrefix(id, "mine") {
				return RecordMine
			}
			return RecordUnknown
		},
		OnSession: func(rt, s string) { sessions <- s },
	})
	defer rs.Close()
	rs.Follow("w.a", nil, record.Spec{})
	env := func(id string) string { return "[BRIDGE_TRIGGER id=" + id + " thread=- reason=r] x [/BRIDGE_TRIGGER]" }
	fr.ch <- record.Event{Kind: record.SessionKnown, SessionID: "s-own", File: "/rec.jsonl", Line: 1}
	fr.ch <- record.Event{Kind: record.UserMessage, Text: env("typed-by-hand"), File: "/rec.jsonl", Line: 2}
	<-prompts
	select {
	case s := <-sessions:
		t.Fatalf("session %q told before the record showed a prompt of this runtime's", s)
	default:
	}
	fr.ch <- record.Event{Kind: record.UserMessage, Text: env("mine1"), File: "/rec.jsonl", Line: 3}
	if s := <-sessions; s != "s-own" {
		t.Fatalf("session %q, want s-own", s)
	}
	// The file rewritten (read anew from its start) naming another session.
	fr.ch <- record.Event{Kind: record.SessionKnown, SessionID: "s-other-workspace", File: "/rec.jsonl", Line: 1}
	fr.ch <- record.Event{Kind: record.UserMessage, Text: env("mine2"), File: "/rec.jsonl", Line: 2}
	<-prompts
	<-prompts
	// Another key of a database record: its own session, shown by a prompt of this runtime's.
	fr.ch <- record.Event{Kind: record.SessionKnown, SessionID: "s-next", File: "/db#ses_2", Line: 9}
	fr.ch <- record.Event{Kind: record.UserMessage, Text: env("mine3"), File: "/db#ses_2", Line: 10}
	<-prompts
	if s := <-sessions; s != "s-next" {
		t.Fatalf("session %q, want s-next (the rewritten header's was told before it?)", s)
	}
}

// testSink is a RecordSink of function fields (nil: nothing told; Prompt nil: unknown).
type testSink struct {
	OnPrompt  func(runtimeID, triggerID, evidence string) RecordOwner
	OnForeign func(runtimeID, path string)
	OnReply   func(runtimeID, triggerID string, r nudge.ReplyRead)
	OnSession func(runtimeID, sessionID string)
	Open      func(f record.Format, s record.Spec) record.Reader
	Now       func() time.Time
}

var _ RecordSink = (*testSink)(nil)

func newRecords(s testSink) *Records {
	return NewRecords(RecordsConfig{Sink: &s, Open: s.Open, Now: s.Now})
}

func (s *testSink) Prompt(rt, id, ev string) RecordOwner {
	if s.OnPrompt == nil {
		return RecordUnknown
	}
	return s.OnPrompt(rt, id, ev)
}

func (s *testSink) Foreign(rt, path string) {
	if s.OnForeign != nil {
		s.OnForeign(rt, path)
	}
}

func (s *testSink) Reply(r nudge.ReplyRead) {
	if s.OnReply != nil {
		s.OnReply(r.RuntimeID, r.TriggerID, r)
	}
}

func (s *testSink) Session(rt, id string) {
	if s.OnSession != nil {
		s.OnSession(rt, id)
	}
}

func (s *testSink) Found(string, string) {}
func (s *testSink) End(string, error)    {}

// TestRecordNamesASessionItCannotBe: a session id a record's content names is taken only
// when the record's file name carries it (an agent writes any header into a file of its
// own, not a file the CLI names for another session), when it is the one the runtime was
// looked for by, and when the directory the session says it runs in is the runtime's.
func TestRecordNamesASessionItCannotBe(t *testing.T) {
	dir := t.TempDir()
	env := func(id string) string { return "[BRIDGE_TRIGGER id=" + id + " thread=- reason=r] x [/BRIDGE_TRIGGER]" }
	for _, c := range []struct {
		name string
		spec record.Spec
		ev   record.Event
		want string
	}{
		{"named for it", record.Spec{Dir: dir}, record.Event{SessionID: "s-1", File: "/s/rollout-2026-s-1.jsonl", Dir: dir}, "s-1"},
		{"header of another session", record.Spec{Dir: dir}, record.Event{SessionID: "s-victim", File: "/s/rollout-2026-s-own.jsonl", Dir: dir}, ""},
		{"not the session looked for", record.Spec{Dir: dir, SessionID: "s-own"}, record.Event{SessionID: "s-victim", File: "/s/rollout-2026-s-victim.jsonl", Dir: dir}, ""},
		{"another directory", record.Spec{Dir: dir}, record.Event{SessionID: "s-2", File: "/s/rollout-2026-s-2.jsonl", Dir: t.TempDir()}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			fr := &fakeReader{ch: make(chan record.Event, 16)}
			sessions := make(chan string, 8)
			prompts := make(chan string, 16)
			rs := newRecords(testSink{
				Open:      func(record.Format, record.Spec) record.Reader { return fr },
				OnPrompt:  func(rt, id, ev string) RecordOwner { prompts <- id; return RecordMine },
				OnSession: func(rt, s string) { sessions <- s },
			})
			defer rs.Close()
			rs.Follow("w.a", record.Codex{}, c.spec)
			ev := c.ev
			ev.Kind, ev.Line = record.SessionKnown, 1
			fr.ch <- ev
			fr.ch <- record.Event{Kind: record.UserMessage, Text: env("mine1"), File: c.ev.File, Line: 2}
			<-prompts
			fr.ch <- record.Event{Kind: record.UserMessage, Text: env("mine2"), File: c.ev.File, Line: 3}
			<-prompts
			got := ""
			select {
			case got = <-sessions:
			default:
			}
			if got != c.want {
				t.Fatalf("session told %q, want %q", got, c.want)
			}
		})
	}
}

// TestRecordReadAgainGivesNoOldReply: a record read again from its start (the CLI wrote it
// anew) brings its old turns' ends back; a prompt read the first time after them, still
// waiting, gets its own turn's reply, not the first turn's.
func TestRecordReadAgainGivesNoOldReply(t *testing.T) {
	fr := &fakeReader{ch: make(chan record.Event, 32)}
	replies := make(chan nudge.ReplyRead, 8)
	rs := newRecords(testSink{
		Open:     func(record.Format, record.Spec) record.Reader { return fr },
		OnPrompt: func(rt, id, ev string) RecordOwner { return RecordMine },
		OnReply:  func(_, _ string, r nudge.ReplyRead) { replies <- r },
	})
	defer rs.Close()
	rs.Follow("w.a", nil, record.Spec{})
	env := func(id string) string { return "[BRIDGE_TRIGGER id=" + id + " thread=- reason=r] x [/BRIDGE_TRIGGER]" }
	const f = "/rec.jsonl"
	first := []record.Event{
		{Kind: record.UserMessage, Text: env("busy-0"), File: f, Line: 10},
		{Kind: record.TurnStarted, File: f, Line: 11},
		{Kind: record.AssistantText, Text: "Answer to busy-0.", File: f, Line: 12},
		{Kind: record.TurnEnded, File: f, Line: 14},
	}
	for _, ev := range first {
		fr.ch <- ev
	}
	if r := <-replies; r.TriggerID != "busy-0" || r.Text != "Answer to busy-0." {
		t.Fatalf("first reply %+v", r)
	}
	fr.ch <- record.Event{Kind: record.UserMessage, Text: env("busy-5"), File: f, Line: 50}
	fr.ch <- record.Event{Kind: record.TurnStarted, File: f, Line: 51}
	for _, ev := range first { // read again from the start
		fr.ch <- ev
	}
	fr.ch <- record.Event{Kind: record.UserMessage, Text: env("busy-5"), File: f, Line: 50}
	fr.ch <- record.Event{Kind: record.AssistantText, Text: "Answer to busy-5.", File: f, Line: 52}
	fr.ch <- record.Event{Kind: record.TurnEnded, File: f, Line: 55}
	if r := <-replies; r.TriggerID != "busy-5" || r.Text != "Answer to busy-5." {
		t.Fatalf("busy-5's reply: %+v", r)
	}
}
