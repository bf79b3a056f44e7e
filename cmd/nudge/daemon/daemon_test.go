package daemon

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/store"
)

// A store whose triggers all aged out is not a new store: without the clean-shutdown
// mark the start is not clean, so the pipeline still looks in the pane before typing a
// request it does not know (a crash may have typed it).
func TestCleanStartAfterEveryTriggerAgedOut(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	dir := t.TempDir()
	db, err := store.Open(filepath.Join(dir, "nudge.db"), store.Options{NoSync: true, Now: clock, IdleAfter: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, _, err := db.Triggers().CreateTrigger(nudge.Trigger{TriggerID: "t1", WorkspaceID: "w", Agent: "a", Closed: true}, nil); err != nil {
		t.Fatal(err)
	}
	now = now.Add(48 * time.Hour)
	if st := db.Retain(context.Background(), store.Retention{Window: time.Hour}); st.Triggers != 1 {
		t.Fatalf("pass: %+v", st)
	}
	if cleanStart(db, hclog.NewNullLogger()) {
		t.Fatal("a store whose triggers aged out counts as new: the start skips the redelivery check")
	}
}

// The command a status line runs with the daemon down passes every argument through the
// shell unchanged, quotes included.
func TestStatusLineCommandQuoting(t *testing.T) {
	cmd := statusLineCommand("/bin/echo", "it's", "/state dir/'x'", "/s.sock")
	out, err := exec.Command("/bin/sh", "-c", cmd).Output()
	want := "status --short --workspace it's --state-dir /state dir/'x' --socket /s.sock\n"
	if err != nil || string(out) != want {
		t.Errorf("sh -c %s: %q %v, want %q", cmd, out, err, want)
	}
}
