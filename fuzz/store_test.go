package fuzz

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/store"
)

// sealedSegment writes audit records through a store, seals them all into one segment
// and returns the segment's bytes and the store's base.
func sealedSegment(f *testing.F) (seg []byte, baseSeq uint64, baseHash string) {
	dir := f.TempDir()
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { now = now.Add(time.Second); return now }
	db, err := store.Open(filepath.Join(dir, "nudge.db"), store.Options{NoSync: true, Now: clock, IdleAfter: -1})
	if err != nil {
		f.Fatal(err)
	}
	defer db.Close()
	for _, ev := range []string{"trigger_received", "trigger_injected", "ack_received", "thread_unblocked"} {
		if _, err := db.AuditLog().AppendAudit(nudge.AuditRecord{Event: ev, TriggerID: "t-1", Reason: "r \"q\" <x>", Detail: []byte(`{"a":1}`)}); err != nil {
			f.Fatal(err)
		}
	}
	now = now.Add(48 * time.Hour)
	archive := filepath.Join(dir, "audit")
	if st := db.Retain(context.Background(), store.Retention{AuditWindow: time.Hour, AuditDir: archive}); st.Err != nil || st.AuditSealed != 4 {
		f.Fatalf("seal: %+v", st)
	}
	names, _ := filepath.Glob(filepath.Join(archive, "audit-*.jsonl"))
	if len(names) != 1 {
		f.Fatalf("segments %v", names)
	}
	if seg, err = os.ReadFile(names[0]); err != nil {
		f.Fatal(err)
	}
	baseSeq, baseHash, _ = db.AuditLog().AuditArchived()
	return seg, baseSeq, baseHash
}

// FuzzVerifyArchive: VerifyArchive reads a sealed segment as hostile input. Properties:
// it never panics on any file; the segment as sealed verifies; and any one byte of it
// changed never does (canonical JSON and the chain leave no byte free).
func FuzzVerifyArchive(f *testing.F) {
	seg, baseSeq, baseHash := sealedSegment(f)
	// corpus: where to change the segment and how.
	f.Add(uint(0), byte(1), []byte(nil))                                  // the first byte
	f.Add(uint(len(seg)-1), byte(0x20), []byte(nil))                      // the last newline
	f.Add(uint(bytes.Index(seg, []byte(`"hash"`))), byte(2), []byte(nil)) // inside a hash
	f.Add(uint(0), byte(0), []byte("{\"seq\":1}\n\xff\n"))                // a file of its own
	f.Fuzz(func(t *testing.T, at uint, x byte, raw []byte) {
		dir := t.TempDir()
		name := filepath.Join(dir, "audit-00000000000000000001-00000000000000000004.jsonl")
		if raw != nil {
			if err := os.WriteFile(name, raw, 0o600); err != nil {
				t.Fatal(err)
			}
			store.VerifyArchive(dir, baseSeq, baseHash) //nolint:errcheck // no panic is the property
			store.VerifyArchive(dir, 0, "")             //nolint:errcheck // no panic is the property
			return
		}
		b := bytes.Clone(seg)
		b[int(at%uint(len(b)))] ^= x
		if err := os.WriteFile(name, b, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := store.VerifyArchive(dir, baseSeq, baseHash)
		if x == 0 && err != nil {
			t.Fatalf("the sealed segment does not verify: %v", err)
		}
		if x != 0 && err == nil {
			t.Fatalf("byte %d changed (^%#x) and the segment still verifies:\n%s", at%uint(len(b)), x, b)
		}
	})
}
