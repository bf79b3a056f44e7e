package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
)

// A write-behind commit that fails (ENOSPC, simulated) loses no trigger CreateTriggerQuick
// accepted: it stays readable and in the create log, new creates are refused with
// ErrUnavailable, and everything commits once writes work again — or, if the store is
// closed first, is replayed from the create log at the next Open.
func TestCommitFailureKeepsCreates(t *testing.T) {
	for _, reopen := range []bool{false, true} {
		t.Run(fmt.Sprintf("reopen=%v", reopen), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "nudge.db")
			var health atomic.Int32
			news := newTestNews(t)
			on(news, func(h HealthChanged) {
				if h.Err != nil {
					health.Add(1)
				} else {
					health.Add(100)
				}
			})
			db, err := Open(path, Options{NoSync: true, Bus: news.b})
			if err != nil {
				t.Fatal(err)
			}
			var full atomic.Bool
			full.Store(true)
			db.failCommit = func() error {
				if full.Load() {
					return fmt.Errorf("write %s: %w", path, syscall.ENOSPC)
				}
				return nil
			}
			ids := []string{"a", "b", "c"}
			for _, id := range ids {
				if _, created, err := db.Triggers().CreateTriggerQuick(trig(id), &nudge.AuditRecord{Event: "trigger_received"}); err != nil || !created {
					t.Fatalf("create %s: %v %v", id, created, err)
				}
				db.Triggers().UpdateTriggerLater(id, func(tr *nudge.Trigger) error { tr.State = "injected"; return nil })
			}
			waitUntil(t, "unavailable", func() bool { return db.Unavailable() != nil })
			if _, _, err := db.Triggers().CreateTriggerQuick(trig("d"), nil); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "no space left") {
				t.Fatalf("a create while commits fail: %v", err)
			}
			for _, id := range ids {
				if _, err := db.Triggers().GetTrigger(id); err != nil {
					t.Fatalf("accepted %s: %v", id, err)
				}
			}
			log, _ := os.ReadFile(walPath(path))
			for _, id := range ids {
				if !strings.Contains(string(log), `"trigger_id":"`+id+`"`) {
					t.Fatalf("create log lost %s: %q", id, log)
				}
			}
			news.drain()
			if db.CommitErrors() == 0 || health.Load() != 1 {
				t.Fatalf("commit errors %d, health reports %d", db.CommitErrors(), health.Load())
			}
			if reopen {
				db.Close()
				db, err = Open(path, Options{NoSync: true})
				if err != nil {
					t.Fatal(err)
				}
			} else {
				full.Store(false)
				waitUntil(t, "recovered", func() bool { return db.Unavailable() == nil })
				db.Flush()
				news.drain()
				if health.Load() != 101 {
					t.Fatalf("health reports %d, want a failure then a recovery", health.Load())
				}
			}
			defer db.Close()
			for _, id := range ids {
				tr, err := db.triggers.committedTrigger(id)
				if err != nil {
					t.Fatalf("%s not committed: %v", id, err)
				}
				if !reopen && tr.State != "injected" {
					t.Fatalf("%s: the later update was lost: %s", id, tr.State)
				}
			}
			if recs, err := db.AuditLog().Audit(AuditFilter{Event: "trigger_received"}); err != nil || len(recs) != 3 {
				t.Fatalf("audit: %d %v", len(recs), err)
			}
			if _, err := db.AuditLog().VerifyAudit(); err != nil {
				t.Fatal(err)
			}
			if !reopen {
				if fi, err := os.Stat(walPath(path)); err != nil || fi.Size() != 0 {
					t.Fatalf("create log not emptied once everything committed: %v %v", fi.Size(), err)
				}
			}
		})
	}
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
