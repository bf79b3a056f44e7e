package ack

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/nudgehq/nudge/ack/record"
)

// floodTranscript writes a Claude Code transcript in home for dir whose user messages
// hold about idBytes of envelope ids, then an unfinished assistant turn of answers
// answerBytes long each: what an agent writing its own record to hurt nudge would write.
func floodTranscript(t *testing.T, home, dir string, idBytes, answers, answerBytes int) {
	t.Helper()
	proj := record.Claude{}.Dirs(record.Spec{Home: home, Dir: dir})[0]
	if err := os.MkdirAll(proj, 0o700); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	line := func(v any) {
		j, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(j)
		b.WriteByte('\n')
	}
	user := func(text string) {
		line(map[string]any{"type": "user", "sessionId": "s1", "message": map[string]any{"role": "user", "content": text}})
	}
	var msg strings.Builder
	for i, n := 0, 0; n < idBytes; i++ {
		e := fmt.Sprintf("[BRIDGE_TRIGGER id=f%07d]\n", i)
		n += len(e)
		if msg.Len()+len(e) > 60<<10 {
			user(msg.String())
			msg.Reset()
		}
		msg.WriteString(e)
	}
	user(msg.String())
	answer := strings.Repeat("a", answerBytes)
	for range answers {
		line(map[string]any{"type": "assistant", "sessionId": "s1", "message": map[string]any{"role": "assistant",
			"content": []map[string]string{{"type": "text", "text": answer}}}})
	}
	if err := os.WriteFile(filepath.Join(proj, "s1.jsonl"), []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestRecordsIDFloodBounded: a record holding 700 KB of envelope ids (about 25,000 of
// them, in user messages of the CLI's own record) and an open turn's answers keeps what
// Records holds for the runtime within its bounds (ids remembered, prompts waiting for a
// reply, their replies' bytes), the process's heap with it, and Stop (a runtime
// deregistered) returns.
func TestRecordsIDFloodBounded(t *testing.T) {
	home, dir := t.TempDir(), t.TempDir()
	floodTranscript(t, home, dir, 700<<10, 4, 8<<10)
	var base runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&base)
	rs := newRecords(testSink{OnPrompt: func(rt, id, ev string) RecordOwner { return RecordUnknown }})
	defer rs.Close()
	rs.Follow("w.a", record.Claude{}, record.Spec{Home: home, Dir: dir, SessionID: "s1"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := rs.Sync(ctx, "w.a"); err != nil {
		t.Fatal(err)
	}
	fl := rs.get("w.a")
	fl.mu.Lock()
	seen, open, replyBytes := len(fl.seen), len(fl.open), 0
	for _, tr := range fl.open {
		replyBytes += tr.b.Cap()
	}
	fl.mu.Unlock()
	if seen > maxSeen || open > maxOpen || replyBytes > maxOpen*record.MaxText {
		t.Fatalf("held %d ids, %d open prompts, %d reply bytes; want at most %d, %d, %d",
			seen, open, replyBytes, maxSeen, maxOpen, maxOpen*record.MaxText)
	}
	var now runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&now)
	if grew := int64(now.HeapAlloc) - int64(base.HeapAlloc); grew > 64<<20 {
		t.Fatalf("the heap grew by %d MiB following one runtime's record", grew>>20)
	}
	rs.Stop("w.a")
	if rs.Following("w.a") {
		t.Fatal("still following after Stop")
	}
}

// TestEnvelopeIDsBounded: a message holding thousands of envelopes gives at most
// MaxMessageIDs ids, the first ones.
func TestEnvelopeIDsBounded(t *testing.T) {
	var b strings.Builder
	for i := range 10 * MaxMessageIDs {
		fmt.Fprintf(&b, "[BRIDGE_TRIGGER id=i%d]\n", i)
	}
	ids := EnvelopeIDs(b.String())
	if len(ids) != MaxMessageIDs || ids[0] != "i0" {
		t.Fatalf("%d ids, first %q", len(ids), ids[0])
	}
}

// TestRecordsForeignOnce: a record showing thousands of other runtimes' prompts is
// passed over once, not once per prompt (each a goroutine and a reader opened anew).
func TestRecordsForeignOnce(t *testing.T) {
	fr := &fakeReader{ch: make(chan record.Event, 16)}
	foreign := make(chan string, 1024)
	rs := newRecords(testSink{
		Open:      func(record.Format, record.Spec) record.Reader { return fr },
		OnPrompt:  func(rt, id, ev string) RecordOwner { return RecordForeign },
		OnForeign: func(rt, path string) { foreign <- path },
	})
	rs.Follow("w.a", nil, record.Spec{})
	var b strings.Builder
	for i := range MaxMessageIDs {
		fmt.Fprintf(&b, "[BRIDGE_TRIGGER id=o%d]\n", i)
	}
	for i := range 4 {
		fr.ch <- record.Event{Kind: record.UserMessage, Text: b.String(), File: "/rec.jsonl", Line: int64(i + 1)}
	}
	rs.Close()
	if n := len(foreign); n != 1 {
		t.Fatalf("passed over %d times", n)
	}
}

// TestForeignInOwnRecordNotFollowedAgain: the runtime's own record by name (the session it
// was looked for by names the file) showing another runtime's envelope is not passed over:
// the agent wrote it there, and looking again would find the same file, without end.
func TestForeignInOwnRecordNotFollowedAgain(t *testing.T) {
	fr := &fakeReader{ch: make(chan record.Event, 16)}
	foreign := make(chan string, 16)
	rs := newRecords(testSink{
		Open:      func(record.Format, record.Spec) record.Reader { return fr },
		OnPrompt:  func(rt, id, ev string) RecordOwner { return RecordForeign },
		OnForeign: func(rt, path string) { foreign <- path },
	})
	rs.Follow("w.a", record.Codex{}, record.Spec{SessionID: "s-own"})
	fr.ch <- record.Event{Kind: record.UserMessage, Text: "[BRIDGE_TRIGGER id=other1]", File: "/s/rollout-2026-s-own.jsonl", Line: 1}
	rs.Close()
	if n := len(foreign); n != 0 {
		t.Fatalf("its own record passed over %d times", n)
	}
}
