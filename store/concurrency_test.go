package store

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/nudgehq/nudge"
)

// TestConcurrent hammers one DB from many goroutines: creators racing on the same ids,
// read-modify-write updates, audit appends and readers. Run it with -race.
func TestConcurrent(t *testing.T) {
	db := open(t)
	const workers, iters, nIDs = 8, 40, 10
	created := make([]atomic.Int32, nIDs)
	var updates [nIDs]atomic.Int32
	var audits atomic.Int64
	var wg sync.WaitGroup
	errc := make(chan error, workers*2)
	for w := 0; w < workers; w++ {
		wg.Add(2)
		go func() { // writer
			defer wg.Done()
			for i := 0; i < iters; i++ {
				k := (w + i) % nIDs
				n, err := concurrentStep(db, k, &created[k], &updates[k])
				if err != nil {
					errc <- err
					return
				}
				audits.Add(n)
			}
		}()
		go func() { // reader
			defer wg.Done()
			for i := 0; i < iters/4; i++ {
				if _, err := db.Triggers().ListTriggers(TriggerFilter{OpenOnly: true}); err != nil {
					errc <- err
					return
				}
				if _, err := db.AuditLog().VerifyAudit(); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	for k := range nIDs {
		id := fmt.Sprintf("t%d", k)
		if c := created[k].Load(); c != 1 {
			t.Errorf("%s: created=true returned %d times, want exactly 1", id, c)
		}
		tr, err := db.Triggers().GetTrigger(id)
		if err != nil {
			t.Fatal(err)
		}
		if want := int(updates[k].Load()); tr.Attempts != want {
			t.Errorf("%s: Attempts = %d after %d increments (lost update)", id, tr.Attempts, want)
		}
	}
	if n, err := db.AuditLog().VerifyAudit(); err != nil || int64(n) != audits.Load() {
		t.Errorf("VerifyAudit = %d, %v; want %d, nil", n, err, audits.Load())
	}
}

// concurrentStep creates trigger k (maybe), increments its Attempts and appends audit;
// it returns how many audit records it appended.
func concurrentStep(db *DB, k int, created, updates *atomic.Int32) (int64, error) {
	id := fmt.Sprintf("t%d", k)
	n := int64(2) // the update's record and the tick
	_, ok, err := db.Triggers().CreateTrigger(trig(id), &nudge.AuditRecord{Event: "trigger_received"})
	if err != nil {
		return 0, err
	}
	if ok {
		created.Add(1)
		n++
	}
	_, err = db.Triggers().UpdateTrigger(id, func(tr *nudge.Trigger) error { tr.Attempts++; return nil },
		nudge.AuditRecord{Event: "attempt"})
	if err != nil {
		return 0, err
	}
	updates.Add(1)
	_, err = db.AuditLog().AppendAudit(nudge.AuditRecord{Event: "tick", TriggerID: id})
	return n, err
}
