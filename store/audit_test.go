package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
	bolt "go.etcd.io/bbolt"
)

func TestAppendAudit(t *testing.T) {
	db := open(t)
	uid := 1000
	in := []nudge.AuditRecord{
		{Event: "runtime_registered", RuntimeID: "rt1", PeerUID: &uid, Reason: "spawn"},
		{Event: "trigger_sent", TriggerID: "t1", Detail: json.RawMessage(`{"a":1}`)},
	}
	got, err := db.AuditLog().AppendAudit(in...)
	if err != nil {
		t.Fatal(err)
	}
	more, err := db.AuditLog().AppendAudit(nudge.AuditRecord{Event: "ack_received", TriggerID: "t1",
		Time: time.Date(2025, 1, 1, 0, 0, 0, 0, time.FixedZone("x", 3600))})
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, more...)
	prev := ""
	for i, r := range got {
		if r.Seq != uint64(i+1) || r.Time.IsZero() || r.Time.Location() != time.UTC || r.PrevHash != prev {
			t.Errorf("#%d: seq %d time %v prev %q; want seq %d, UTC time, prev %q", i, r.Seq, r.Time, r.PrevHash, i+1, prev)
		}
		// The documented formula, computed independently of the package's helpers.
		r2 := r
		r2.Hash = ""
		body, _ := json.Marshal(r2)
		sum := sha256.Sum256(append([]byte(prev), body...))
		if want := hex.EncodeToString(sum[:]); r.Hash != want {
			t.Errorf("#%d: hash %s, want %s", i, r.Hash, want)
		}
		prev = r.Hash
	}
	stored, err := db.AuditLog().Audit(AuditFilter{})
	if err != nil || len(stored) != 3 {
		t.Fatalf("Audit = %d records, %v", len(stored), err)
	}
	if stored[0].Hash != got[0].Hash || *stored[0].PeerUID != 1000 || string(stored[1].Detail) != `{"a":1}` {
		t.Errorf("stored records differ from returned: %+v", stored)
	}
	if seq, hash, _ := db.AuditLog().AuditHead(); seq != 3 || hash != got[2].Hash {
		t.Errorf("AuditHead = %d %s, want 3 %s", seq, hash, got[2].Hash)
	}
	if n, err := db.AuditLog().VerifyAudit(); n != 3 || err != nil {
		t.Errorf("VerifyAudit = %d, %v", n, err)
	}
}

func TestAuditFilter(t *testing.T) {
	db := open(t)
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 1; i <= 6; i++ {
		_, err := db.AuditLog().AppendAudit(nudge.AuditRecord{
			Time: base.Add(time.Duration(i) * time.Minute), Event: fmt.Sprintf("e%d", i%2),
			TriggerID: fmt.Sprintf("t%d", i%3), RuntimeID: fmt.Sprintf("rt%d", i%2),
			ThreadID: "th", Workspace: fmt.Sprintf("ws%d", i/4),
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for i, tc := range []struct {
		f    AuditFilter
		want string
	}{
		{AuditFilter{}, "1 2 3 4 5 6"},
		{AuditFilter{TriggerID: "t1"}, "1 4"},
		{AuditFilter{RuntimeID: "rt0", Event: "e0"}, "2 4 6"},
		{AuditFilter{Workspace: "ws1", ThreadID: "th"}, "4 5 6"},
		{AuditFilter{Since: base.Add(2 * time.Minute), Until: base.Add(5 * time.Minute)}, "2 3 4"},
		{AuditFilter{AfterSeq: 4}, "5 6"},
		{AuditFilter{Limit: 2}, "1 2"},
		{AuditFilter{Limit: 2, Newest: true}, "5 6"},
		{AuditFilter{Limit: 10, Newest: true, AfterSeq: 3}, "4 5 6"},
		{AuditFilter{ThreadID: "none"}, ""},
	} {
		recs, err := db.AuditLog().Audit(tc.f)
		if err != nil {
			t.Fatalf("#%d: %v", i, err)
		}
		var seqs []string
		for _, r := range recs {
			seqs = append(seqs, fmt.Sprint(r.Seq))
		}
		if got := fmt.Sprint(seqs); got != "["+tc.want+"]" {
			t.Errorf("#%d: got %s, want [%s]", i, got, tc.want)
		}
	}
}

// auditFile writes five audit records (through several transactions, one of them a
// CreateTrigger) to a fresh store, closes it and returns the file's path.
func auditFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "nudge.db")
	db, err := Open(path, Options{Now: newClock().Now})
	if err != nil {
		t.Fatal(err)
	}
	rec := func(i int) nudge.AuditRecord {
		return nudge.AuditRecord{Event: "trigger_sent", TriggerID: fmt.Sprintf("t%d", i), Reason: fmt.Sprintf("needle-reason-%d", i)}
	}
	if _, err := db.AuditLog().AppendAudit(rec(1), rec(2)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.Triggers().CreateTrigger(trig("t3"), &nudge.AuditRecord{Event: "trigger_received", Reason: "needle-reason-3"}); err != nil {
		t.Fatal(err)
	}
	for i := 4; i <= 5; i++ {
		if _, err := db.AuditLog().AppendAudit(rec(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// rawUpdate opens path with bbolt directly, outside the store, and runs fn.
func rawUpdate(t *testing.T, path string, fn func(audit *bolt.Bucket) error) {
	t.Helper()
	bdb, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
	if err := bdb.Update(func(tx *bolt.Tx) error { return fn(tx.Bucket(bucketAudit)) }); err != nil {
		t.Fatal(err)
	}
}

// verifyFile reopens the store at path and runs VerifyAudit.
func verifyFile(t *testing.T, path string) (int, error) {
	t.Helper()
	db, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	return db.AuditLog().VerifyAudit()
}

func wantChainError(t *testing.T, err error, seq uint64) {
	t.Helper()
	var ce *ChainError
	if !errors.As(err, &ce) {
		t.Fatalf("VerifyAudit error %v, want *ChainError at seq %d", err, seq)
	}
	if ce.Seq != seq {
		t.Fatalf("ChainError at seq %d (%s), want seq %d", ce.Seq, ce.Reason, seq)
	}
}

func TestVerifyAuditTampered(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		if n, err := verifyFile(t, auditFile(t)); n != 5 || err != nil {
			t.Fatalf("VerifyAudit = %d, %v; want 5, nil", n, err)
		}
	})
	t.Run("EveryByteFlipped", func(t *testing.T) {
		// Flip each bit 0 of each byte of record 3 in turn; every one must be caught at 3.
		rawUpdate(t, auditFile(t), func(b *bolt.Bucket) error {
			orig := bytes.Clone(b.Get(u64(3)))
			for i := range orig {
				v := bytes.Clone(orig)
				v[i] ^= 1
				if err := b.Put(u64(3), v); err != nil {
					return err
				}
				_, err := verifyTx(b.Tx())
				var ce *ChainError
				if !errors.As(err, &ce) || ce.Seq != 3 {
					t.Errorf("byte %d (%q→%q) flipped: VerifyAudit error %v, want ChainError at 3", i, orig[i], v[i], err)
				}
			}
			return b.Put(u64(3), orig)
		})
	})
	for _, tc := range []struct {
		name string
		seq  uint64
		edit func(b *bolt.Bucket) error
	}{
		{"ByteFlipped", 3, func(b *bolt.Bucket) error {
			v := bytes.Clone(b.Get(u64(3)))
			i := bytes.Index(v, []byte("needle"))
			v[i] ^= 0x20 // n -> N
			return b.Put(u64(3), v)
		}},
		{"Deleted", 3, func(b *bolt.Bucket) error { return b.Delete(u64(3)) }},
		{"FirstDeleted", 1, func(b *bolt.Bucket) error { return b.Delete(u64(1)) }},
		{"LastDeleted", 5, func(b *bolt.Bucket) error { return b.Delete(u64(5)) }},
		{"AllDeleted", 1, func(b *bolt.Bucket) error {
			for i := uint64(1); i <= 5; i++ {
				if err := b.Delete(u64(i)); err != nil {
					return err
				}
			}
			return nil
		}},
		{"Swapped", 2, func(b *bolt.Bucket) error {
			v2, v3 := bytes.Clone(b.Get(u64(2))), bytes.Clone(b.Get(u64(3)))
			if err := b.Put(u64(2), v3); err != nil {
				return err
			}
			return b.Put(u64(3), v2)
		}},
		{"DeletedAndRenumbered", 3, func(b *bolt.Bucket) error {
			// Delete 3 and move 4 and 5 down, fixing their seq fields: the links break.
			for i := uint64(3); i < 5; i++ {
				var r nudge.AuditRecord
				json.Unmarshal(b.Get(u64(i+1)), &r)
				r.Seq = i
				v, _ := json.Marshal(r)
				if err := b.Put(u64(i), v); err != nil {
					return err
				}
			}
			return b.Delete(u64(5))
		}},
		{"Appended", 6, func(b *bolt.Bucket) error {
			var r nudge.AuditRecord
			json.Unmarshal(b.Get(u64(5)), &r)
			r.Seq, r.PrevHash = 6, r.Hash
			v, _ := sealAudit(&r)
			return b.Put(u64(6), v)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := auditFile(t)
			rawUpdate(t, path, tc.edit)
			_, err := verifyFile(t, path)
			wantChainError(t, err, tc.seq)
		})
	}
}

// TestVerifyAuditFileEdited edits the database file's bytes on disk, as an intruder
// with a hex editor would, and expects VerifyAudit to point at the edited record.
func TestVerifyAuditFileEdited(t *testing.T) {
	for _, tc := range []struct {
		name     string
		old, new string
	}{
		{"ValueChar", "needle-reason-3", "needle-reasoN-3"},
		{"KeyCase", `"reason":"needle-reason-3"`, `"Reason":"needle-reason-3"`}, // same decoded value
		{"Digit", `"seq":3,`, `"seq":2,`},                                       // occurs only in record 3
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := auditFile(t)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			old := []byte(tc.old)
			n := bytes.Count(data, old)
			if n == 0 {
				t.Fatalf("%q not found in the file", old)
			}
			// bbolt is copy-on-write: stale copies may sit in free pages. Edit them all.
			data = bytes.ReplaceAll(data, old, []byte(tc.new))
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			_, err = verifyFile(t, path)
			wantChainError(t, err, 3)
		})
	}
}
