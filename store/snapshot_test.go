package store

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
)

func TestReadSnapshot(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nudge.db")
	db, err := Open(path, Options{NoSync: true, Now: newClock().Now})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"rt_w.a", "rt_w.b", "rt_w.c"} {
		if err := db.Runtimes().CreateRuntime(nudge.Runtime{RuntimeID: id, WorkspaceID: "w", Status: nudge.StatusReady}); err != nil {
			t.Fatal(err)
		}
	}
	for i, tr := range []struct{ id, rt string }{{"t1", "rt_w.a"}, {"t2", "rt_w.b"}, {"t3", "rt_w.a"}} {
		if _, _, err := db.Triggers().CreateTrigger(nudge.Trigger{TriggerID: tr.id, RuntimeID: tr.rt, WorkspaceID: "w", Attempts: i}, nil); err != nil {
			t.Fatal(err)
		}
	}

	// OK while the owner is closed; ErrLocked while it holds the file.
	if _, err := ReadSnapshot(path, 50*time.Millisecond); !errors.Is(err, ErrLocked) {
		t.Fatalf("read beside an open store: %v, want ErrLocked", err)
	}
	db.Close()
	s, err := ReadSnapshot(path, 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Runtimes) != 3 || s.Last["rt_w.a"].TriggerID != "t3" || s.Last["rt_w.b"].TriggerID != "t2" || len(s.Last) != 2 || s.Written.IsZero() {
		t.Fatalf("snapshot: %d runtimes, last %+v, written %v", len(s.Runtimes), s.Last, s.Written)
	}
	// A daemon opening after the read gets the file at once.
	db, err = Open(path, Options{NoSync: true, Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("open after a read: %v", err)
	}
	db.Close()
	if _, err := ReadSnapshot(filepath.Join(t.TempDir(), "absent.db"), time.Millisecond); err == nil {
		t.Fatal("an absent store read")
	}
}
