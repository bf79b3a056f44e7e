package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
)

func TestOpen(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "a", "b", "nudge.db")
		db := openAt(t, path, Options{})
		if db.Path() != path {
			t.Errorf("Path() = %q, want %q", db.Path(), path)
		}
		for p, want := range map[string]os.FileMode{filepath.Dir(path): 0o700, path: 0o600} {
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if got := fi.Mode().Perm(); got != want {
				t.Errorf("mode of %s = %o, want %o", filepath.Base(p), got, want)
			}
		}
	})
	t.Run("ErrLocked", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "nudge.db")
		openAt(t, path, Options{})
		db2, err := Open(path, Options{Timeout: 50 * time.Millisecond})
		if err == nil {
			db2.Close()
			t.Fatal("second Open succeeded, want ErrLocked")
		}
		if !errors.Is(err, ErrLocked) {
			t.Fatalf("second Open: %v, want ErrLocked", err)
		}
		if !strings.Contains(err.Error(), "another nudge") {
			t.Errorf("error %q does not say what to do", err)
		}
	})
	t.Run("ReopenKeepsData", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "nudge.db")
		db, err := Open(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := db.Triggers().CreateTrigger(trig("t1"), &nudge.AuditRecord{Event: "trigger_received"}); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		db = openAt(t, path, Options{})
		if got, err := db.Triggers().GetTrigger("t1"); err != nil || got.Prompt != "hello t1" {
			t.Fatalf("after reopen GetTrigger = %+v, %v", got, err)
		}
		if n, err := db.AuditLog().VerifyAudit(); n != 1 || err != nil {
			t.Fatalf("after reopen VerifyAudit = %d, %v; want 1, nil", n, err)
		}
	})
	t.Run("FileModeTightened", func(t *testing.T) {
		// A store left group-readable (an empty file is refused as damaged: see
		// TestOpenDamaged).
		path := filepath.Join(t.TempDir(), "nudge.db")
		first, err := Open(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		first.Close()
		if err := os.Chmod(path, 0o644); err != nil {
			t.Fatal(err)
		}
		openAt(t, path, Options{})
		if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
			t.Errorf("mode = %o, want 600", fi.Mode().Perm())
		}
	})
}

func TestClose(t *testing.T) {
	db := open(t)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := db.Triggers().GetTrigger("x"); !errors.Is(err, ErrClosed) {
		t.Errorf("GetTrigger after Close: %v, want ErrClosed", err)
	}
	if _, err := db.AuditLog().AppendAudit(nudge.AuditRecord{Event: "x"}); !errors.Is(err, ErrClosed) {
		t.Errorf("AppendAudit after Close: %v, want ErrClosed", err)
	}
}
