package store

import (
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
)

// clock is a fake Options.Now that advances one millisecond per call.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Millisecond)
	return c.t
}

// open opens a store in a fresh temporary directory with a fake clock; it is closed
// when the test ends.
func open(t testing.TB) *DB {
	t.Helper()
	return openAt(t, filepath.Join(t.TempDir(), "state", "nudge.db"), Options{NoSync: true, Now: newClock().Now})
}

func openAt(t testing.TB, path string, opts Options) *DB {
	t.Helper()
	db, err := Open(path, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func trig(id string) nudge.Trigger {
	return nudge.Trigger{TriggerID: id, WorkspaceID: "ws", Agent: "reviewer", Prompt: "hello " + id, State: "queued"}
}
