package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
	bolt "go.etcd.io/bbolt"
)

const testWindow = 24 * time.Hour

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// retainStore is a store on a fake clock with n triggers t0..t(n-1), each with an audit
// record and an attempt; the even ones are closed (finished), the odd ones open.
func retainStore(t *testing.T, n int) (*DB, *clock, string) {
	t.Helper()
	c := newClock()
	dir := t.TempDir()
	db := openAt(t, filepath.Join(dir, "nudge.db"), Options{NoSync: true, Now: c.Now})
	for i := range n {
		id := fmt.Sprintf("t%d", i)
		if _, _, err := db.Triggers().CreateTrigger(trig(id), &nudge.AuditRecord{Event: "trigger_received"}); err != nil {
			t.Fatal(err)
		}
		if err := db.Triggers().AddAttempt(nudge.Attempt{TriggerID: id, Backend: "tmux"}); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			if _, err := db.Triggers().UpdateTrigger(id, func(tr *nudge.Trigger) error { tr.Closed, tr.State = true, "acked"; return nil },
				nudge.AuditRecord{Event: "trigger_closed"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return db, c, dir
}

func retention(dir string) Retention {
	return Retention{Window: testWindow, AuditDir: filepath.Join(dir, "audit"), Batch: 3, Pause: time.Microsecond}
}

func TestRetainRemovesFinishedKeepsOpen(t *testing.T) {
	db, c, dir := retainStore(t, 20)
	st := db.Retain(context.Background(), retention(dir))
	if st.Err != nil || st.Triggers != 0 {
		t.Fatalf("inside the window: %+v", st)
	}
	c.advance(testWindow + time.Hour)
	// A finished trigger written again inside the window (a late reply) stays.
	if _, err := db.Triggers().UpdateTrigger("t18", func(tr *nudge.Trigger) error { tr.Reply = "late"; return nil }); err != nil {
		t.Fatal(err)
	}
	st = db.Retain(context.Background(), retention(dir))
	if st.Err != nil || st.Triggers != 9 || st.Attempts != 9 {
		t.Fatalf("past the window: %+v, want 9 triggers and 9 attempts removed", st)
	}
	if st.Transactions < 4 {
		t.Errorf("%d transactions for 9 triggers in batches of 3", st.Transactions)
	}
	for i := range 20 {
		id := fmt.Sprintf("t%d", i)
		tr, err := db.Triggers().GetTrigger(id)
		switch {
		case i%2 == 1 || i == 18:
			if err != nil {
				t.Errorf("%s (open or recent) removed: %v", id, err)
			}
			if i%2 == 1 && tr.Closed {
				t.Errorf("%s: closed", id)
			}
		default:
			var aged *AgedOutError
			if !errors.As(err, &aged) || !errors.Is(err, ErrNotFound) {
				t.Fatalf("%s: %v, want an AgedOutError that is ErrNotFound", id, err)
			}
			if aged.Workspace != "ws" || aged.Finished.IsZero() || !aged.Removed.After(aged.Finished) {
				t.Errorf("%s: tombstone %+v", id, aged)
			}
			if as, _ := db.Triggers().Attempts(id); len(as) != 0 {
				t.Errorf("%s: %d attempts kept", id, len(as))
			}
		}
	}
	open, err := db.Triggers().ListTriggers(TriggerFilter{OpenOnly: true})
	if err != nil || len(open) != 10 {
		t.Fatalf("open triggers after retention: %d, %v; want 10", len(open), err)
	}
	// Tombstones go after their own window; the id is then simply unknown.
	c.advance(testWindow + time.Hour)
	st = db.Retain(context.Background(), retention(dir))
	if st.Tombstones != 9 || st.Triggers != 1 { // t18 is past the window now
		t.Fatalf("second pass: %+v, want 9 tombstones and t18 removed", st)
	}
	_, err = db.Triggers().GetTrigger("t0")
	var aged *AgedOutError
	if !errors.Is(err, ErrNotFound) || errors.As(err, &aged) {
		t.Fatalf("t0 after its tombstone went: %v", err)
	}
}

func TestRetainSealsAuditAndVerifies(t *testing.T) {
	db, c, dir := retainStore(t, 30)
	c.advance(testWindow + time.Hour)
	if _, err := db.AuditLog().AppendAudit(nudge.AuditRecord{Event: "kept", Reason: "needle-kept"}); err != nil {
		t.Fatal(err)
	}
	before, _, _ := db.AuditLog().AuditHead()
	st := db.Retain(context.Background(), retention(dir))
	if st.Err != nil || st.AuditSealed != int(before)-1 || st.Segments != 1 {
		t.Fatalf("pass: %+v, want %d records sealed in one segment", st, before-1)
	}
	n, err := db.AuditLog().VerifyAudit()
	if err != nil || n != 1 {
		t.Fatalf("VerifyAudit after sealing: %d, %v; want 1 record checked", n, err)
	}
	// Appends go on from the head; the chain still verifies.
	if _, err := db.AuditLog().AppendAudit(nudge.AuditRecord{Event: "after"}); err != nil {
		t.Fatal(err)
	}
	if n, err := db.AuditLog().VerifyAudit(); err != nil || n != 2 {
		t.Fatalf("VerifyAudit after an append: %d, %v", n, err)
	}
	baseSeq, baseHash, err := db.AuditLog().AuditArchived()
	if err != nil || baseSeq != before-1 {
		t.Fatalf("AuditArchived: %d, %v; want %d", baseSeq, err, before-1)
	}
	if n, err := VerifyArchive(filepath.Join(dir, "audit"), baseSeq, baseHash); err != nil || n != int(baseSeq) {
		t.Fatalf("VerifyArchive: %d, %v; want %d", n, err, baseSeq)
	}
	// Sealing again later: a second segment whose chain continues from the first.
	c.advance(testWindow + time.Hour)
	if st := db.Retain(context.Background(), retention(dir)); st.Err != nil || st.AuditSealed != 2 {
		t.Fatalf("second pass: %+v", st)
	}
	baseSeq, baseHash, _ = db.AuditLog().AuditArchived()
	if n, err := VerifyArchive(filepath.Join(dir, "audit"), baseSeq, baseHash); err != nil || n != int(baseSeq) {
		t.Fatalf("VerifyArchive across two segments: %d, %v", n, err)
	}
	if n, err := db.AuditLog().VerifyAudit(); err != nil || n != 0 {
		t.Fatalf("VerifyAudit with every record sealed: %d, %v", n, err)
	}
}

// A tampered kept record, a deleted first kept record and an edited segment all fail.
func TestRetainAuditTampered(t *testing.T) {
	setup := func(t *testing.T) (string, string) {
		db, c, dir := retainStore(t, 10)
		c.advance(testWindow + time.Hour)
		for i := range 3 {
			if _, err := db.AuditLog().AppendAudit(nudge.AuditRecord{Event: "kept", Reason: fmt.Sprintf("needle-kept-%d", i)}); err != nil {
				t.Fatal(err)
			}
		}
		if st := db.Retain(context.Background(), retention(dir)); st.Err != nil || st.AuditSealed == 0 {
			t.Fatalf("pass: %+v", st)
		}
		path := db.Path()
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		return path, filepath.Join(dir, "audit")
	}
	t.Run("KeptEdited", func(t *testing.T) {
		path, _ := setup(t)
		rawUpdate(t, path, func(b *bolt.Bucket) error {
			k, v := b.Cursor().Last()
			return b.Put(k, []byte(string(v[:len(v)-3])+`x"}`))
		})
		if _, err := verifyFile(t, path); err == nil {
			t.Fatal("an edited kept record verifies")
		}
	})
	t.Run("FirstKeptDeleted", func(t *testing.T) {
		path, _ := setup(t)
		var first uint64
		rawUpdate(t, path, func(b *bolt.Bucket) error {
			k, _ := b.Cursor().First()
			first = u64be(k)
			return b.Delete(k)
		})
		_, err := verifyFile(t, path)
		wantChainError(t, err, first)
	})
	t.Run("SegmentEdited", func(t *testing.T) {
		path, archive := setup(t)
		names, _ := filepath.Glob(filepath.Join(archive, segmentGlob))
		if len(names) != 1 {
			t.Fatalf("segments: %v", names)
		}
		data, err := os.ReadFile(names[0])
		if err != nil {
			t.Fatal(err)
		}
		data = []byte(replaceOnce(string(data), `"trigger_closed"`, `"trigger_clozed"`))
		if err := os.WriteFile(names[0], data, 0o600); err != nil {
			t.Fatal(err)
		}
		db := openAt(t, path, Options{})
		seq, hash, _ := db.AuditLog().AuditArchived()
		if _, err := VerifyArchive(archive, seq, hash); err == nil {
			t.Fatal("an edited segment verifies")
		}
		if _, err := db.AuditLog().VerifyAudit(); err != nil {
			t.Fatalf("the kept log: %v", err)
		}
	})
}

func u64be(k []byte) uint64 {
	var n uint64
	for _, b := range k {
		n = n<<8 | uint64(b)
	}
	return n
}

func replaceOnce(s, old, new string) string {
	for i := 0; i+len(old) <= len(s); i++ {
		if s[i:i+len(old)] == old {
			return s[:i] + new + s[i+len(old):]
		}
	}
	return s
}

// The loop Open starts runs passes and reports them, a pass is followed by the idle
// release (the pages it touched leave the resident set); Close ends the loop.
func TestRetainLoop(t *testing.T) {
	c := newClock()
	dir := t.TempDir()
	passes := make(chan RetainStats, 16)
	r := retention(dir)
	r.Every = 10 * time.Millisecond
	news := newTestNews(t)
	on(news, func(st RetainStats) {
		select {
		case passes <- st:
		default:
		}
	})
	idle := make(chan struct{}, 1)
	on(news, func(Idle) {
		select {
		case idle <- struct{}{}:
		default:
		}
	})
	db := openAt(t, filepath.Join(dir, "nudge.db"), Options{NoSync: true, Now: c.Now, Retain: r,
		IdleAfter: 5 * time.Millisecond, Bus: news.b})
	tr := trig("old")
	tr.Closed = true
	if _, _, err := db.Triggers().CreateTrigger(tr, nil); err != nil {
		t.Fatal(err)
	}
	c.advance(testWindow + time.Hour)
	for st := range passes {
		if st.Err != nil {
			t.Fatal(st.Err)
		}
		if st.Triggers == 1 {
			break
		}
	}
	// Nothing else here arms the release (CreateTrigger commits without the write-behind
	// queue, and a pass with nothing to do writes nothing): the pass that removed did.
	<-idle
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// With Watched set and nothing to remove (no window, no sealing: --retain 0), the loop
// still runs its passes, so a subscriber watching the file's size hears them; they write
// nothing and never arm the idle release.
func TestRetainLoopKeepAllStillCalls(t *testing.T) {
	passes := make(chan RetainStats, 16)
	news := newTestNews(t)
	on(news, func(st RetainStats) {
		select {
		case passes <- st:
		default:
		}
	})
	r := Retention{Every: 5 * time.Millisecond, Watched: true}
	idle := make(chan struct{}, 1)
	on(news, func(Idle) {
		select {
		case idle <- struct{}{}:
		default:
		}
	})
	db := openAt(t, filepath.Join(t.TempDir(), "nudge.db"), Options{NoSync: true, Retain: r,
		IdleAfter: time.Millisecond, Bus: news.b})
	for range 3 {
		select {
		case st := <-passes:
			if st != (RetainStats{}) {
				t.Fatalf("a pass with nothing to keep did %+v", st)
			}
		case <-time.After(time.Minute):
			t.Fatal("no pass runs when nothing is kept but Watched is set")
		}
	}
	select {
	case <-idle:
		t.Fatal("a pass that wrote nothing armed the idle release")
	default:
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// A crash after a segment was written and before its records left the store: the next
// pass writes them again into an overlapping segment, and the archive still verifies.
func TestRetainSealOverlap(t *testing.T) {
	db, c, dir := retainStore(t, 10)
	c.advance(testWindow + time.Hour)
	archive := filepath.Join(dir, "audit")
	recs, _, err := db.audit.sealable(c.Now(), 5, sealBytes)
	if err != nil || len(recs) != 5 {
		t.Fatalf("sealable: %d, %v", len(recs), err)
	}
	if err := writeSegment(archive, recs); err != nil { // ... and the process dies here
		t.Fatal(err)
	}
	if st := db.Retain(context.Background(), retention(dir)); st.Err != nil || st.AuditSealed == 0 {
		t.Fatalf("pass: %+v", st)
	}
	names, _ := filepath.Glob(filepath.Join(archive, segmentGlob))
	if len(names) != 2 {
		t.Fatalf("segments %v, want the overlapping two", names)
	}
	seq, hash, _ := db.AuditLog().AuditArchived()
	if n, err := VerifyArchive(archive, seq, hash); err != nil || n != int(seq) {
		t.Fatalf("VerifyArchive with an overlap: %d, %v; want %d", n, err, seq)
	}
	if _, err := db.AuditLog().VerifyAudit(); err != nil {
		t.Fatal(err)
	}
}

// A pass that seals more than a segment holds writes several, chained to each other.
func TestRetainSealsSeveralSegments(t *testing.T) {
	old := sealBytes
	sealBytes = 2000 // a few records each
	t.Cleanup(func() { sealBytes = old })
	db, c, dir := retainStore(t, 40)
	c.advance(testWindow + time.Hour)
	st := db.Retain(context.Background(), retention(dir))
	if st.Err != nil || st.Segments < 5 || st.AuditSealed != 60 {
		t.Fatalf("pass: %+v, want 60 records in several segments", st)
	}
	seq, hash, _ := db.AuditLog().AuditArchived()
	if n, err := VerifyArchive(filepath.Join(dir, "audit"), seq, hash); err != nil || n != 60 {
		t.Fatalf("VerifyArchive: %d, %v", n, err)
	}
	// A segment in the middle deleted: a gap.
	names, _ := filepath.Glob(filepath.Join(dir, "audit", segmentGlob))
	if err := os.Remove(names[2]); err != nil {
		t.Fatal(err)
	}
	if _, err := VerifyArchive(filepath.Join(dir, "audit"), seq, hash); err == nil {
		t.Fatal("an archive with a segment missing in the middle verifies")
	}
	// The oldest ones deleted (the operator's to do): what is left still verifies.
	for _, n := range names[:3] {
		os.Remove(n)
	}
	if _, err := VerifyArchive(filepath.Join(dir, "audit"), seq, hash); err != nil {
		t.Fatalf("the newest segments: %v", err)
	}
}

// With no trigger window, an audit window alone seals the audit log and removes no
// trigger.
func TestRetainAuditOnly(t *testing.T) {
	db, c, dir := retainStore(t, 6)
	c.advance(testWindow + time.Hour)
	r := Retention{AuditWindow: testWindow, AuditDir: filepath.Join(dir, "audit"), Pause: time.Microsecond}
	st := db.Retain(context.Background(), r)
	if st.Err != nil || st.Triggers != 0 || st.AuditSealed != 9 {
		t.Fatalf("pass: %+v, want 9 audit records sealed and no trigger removed", st)
	}
	if ts, _ := db.Triggers().ListTriggers(TriggerFilter{}); len(ts) != 6 {
		t.Fatalf("%d triggers kept, want 6", len(ts))
	}
}

// An overlap left by a crash is checked too: a record edited in the overlapping copy, its
// hash field kept, fails.
func TestRetainSealOverlapTampered(t *testing.T) {
	db, c, dir := retainStore(t, 10)
	c.advance(testWindow + time.Hour)
	archive := filepath.Join(dir, "audit")
	recs, _, err := db.audit.sealable(c.Now(), 5, sealBytes)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeSegment(archive, recs); err != nil {
		t.Fatal(err)
	}
	if st := db.Retain(context.Background(), retention(dir)); st.Err != nil {
		t.Fatal(st.Err)
	}
	names, _ := filepath.Glob(filepath.Join(archive, segmentGlob))
	if len(names) != 2 {
		t.Fatalf("segments %v", names)
	}
	// The second (longer) file repeats records 1-5; edit record 2 there.
	data, err := os.ReadFile(names[1])
	if err != nil {
		t.Fatal(err)
	}
	edited := replaceOnce(string(data), `"seq":2,`, `"seq":2,"reason":"x",`)
	if edited == string(data) {
		t.Fatal("record 2 not found")
	}
	if err := os.WriteFile(names[1], []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	seq, hash, _ := db.AuditLog().AuditArchived()
	if _, err := VerifyArchive(archive, seq, hash); err == nil {
		t.Fatal("an edited record in an overlap verifies")
	}
}

// A store whose triggers all aged out still knows it held some (the daemon's clean-start
// check must not take it for a new one).
func TestTriggersCreatedAfterRetention(t *testing.T) {
	db, c, dir := retainStore(t, 2)
	if _, err := db.Triggers().UpdateTrigger("t1", func(tr *nudge.Trigger) error { tr.Closed = true; return nil }); err != nil {
		t.Fatal(err)
	}
	c.advance(testWindow + time.Hour)
	if st := db.Retain(context.Background(), retention(dir)); st.Triggers != 2 {
		t.Fatalf("pass: %+v", st)
	}
	if ts, _ := db.Triggers().ListTriggers(TriggerFilter{}); len(ts) != 0 {
		t.Fatalf("%d triggers left", len(ts))
	}
	if n, err := db.Triggers().TriggersCreated(); err != nil || n != 2 {
		t.Fatalf("TriggersCreated: %d, %v; want 2", n, err)
	}
}
