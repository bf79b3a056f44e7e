package store

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
	bolt "go.etcd.io/bbolt"
)

func TestGates(t *testing.T) {
	db := open(t)
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	db.Gates().PutGateLater(Gate{Kind: GateRate, Key: "w/a\x00th1", Hits: []time.Time{now}})
	db.Gates().PutGateLater(Gate{Kind: GateLoop, Key: "w/a\x00th1", Turns: 2})
	db.Gates().PutGateLater(Gate{Kind: GateLoop, Key: "w/a\x00th10", Turns: 1})
	if err := db.Gates().PutGate(Gate{Kind: GateLoop, Key: "w/b\x00th1", Blocked: "repeats"}); err != nil {
		t.Fatal(err)
	}
	if err := db.Gates().PutGate(Gate{Kind: GateLoop}); err == nil {
		t.Fatal("ErrInvalid: a gate without a key was stored")
	}
	gs, err := db.Gates().ListGates()
	// By kind, then key: loop w/a th1, loop w/a th10, loop w/b th1, rate w/a th1.
	if err != nil || len(gs) != 4 || gs[2].Blocked != "repeats" || len(gs[3].Hits) != 1 || !gs[3].Hits[0].Equal(now) {
		t.Fatalf("got %+v, %v", gs, err)
	}
	db.Gates().DeleteGateLater(GateLoop, "w/a\x00th1") // exact: th10 stays
	db.Gates().DeleteGatesLater(GateLoop, "w/b\x00")   // prefix: every thread of w/b
	db.Flush()
	gs, _ = db.Gates().ListGates()
	if len(gs) != 2 || gs[0].Key != "w/a\x00th10" || gs[1].Kind != GateRate {
		t.Fatalf("after deletes: %+v", gs)
	}
}

// TestOpenOldFileWithoutGates: a store written before the gates bucket existed opens
// unchanged, its records intact, and takes gates from then on.
func TestOpenOldFileWithoutGates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nudge.db")
	old, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = old.Update(func(tx *bolt.Tx) error {
		for _, name := range allBuckets {
			if string(name) == string(bucketGates) {
				continue
			}
			if _, err := tx.CreateBucket(name); err != nil {
				return err
			}
		}
		b, _ := json.Marshal(nudge.Runtime{RuntimeID: "rt_w.a", Status: "ready"})
		return tx.Bucket(bucketRuntimes).Put([]byte("rt_w.a"), b)
	})
	old.Close()
	if err != nil {
		t.Fatal(err)
	}
	db := openAt(t, path, Options{NoSync: true})
	if rt, err := db.Runtimes().GetRuntime("rt_w.a"); err != nil || rt.Status != "ready" {
		t.Fatalf("old runtime: %+v %v", rt, err)
	}
	if gs, err := db.Gates().ListGates(); err != nil || len(gs) != 0 {
		t.Fatalf("gates of an old file: %+v %v", gs, err)
	}
	if err := db.Gates().PutGate(Gate{Kind: GateLoop, Key: "k", Blocked: "x"}); err != nil {
		t.Fatal(err)
	}
}
