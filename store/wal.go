package store

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/nudgehq/nudge"
	bolt "go.etcd.io/bbolt"
)

// The create log: CreateTriggerQuick writes a new trigger as one line to a side file
// with a single write(2) — in the kernel's hands, so a kill -9 of the process cannot lose
// it — and queues the bbolt commit (fsync) behind it. Open replays the log into bbolt and
// truncates it. A power loss can lose the lines of the last moments before their commit
// (the log is not fsynced); it cannot damage the bbolt file, whose commits stay synced.

type walEntry struct {
	Trigger nudge.Trigger      `json:"trigger"`
	Audit   *nudge.AuditRecord `json:"audit,omitempty"`
}

// wal is the create log and the triggers it holds that bbolt does not yet.
type wal struct {
	mu      sync.Mutex
	f       *os.File
	size    int64 // bytes of whole lines in the log
	pending map[string]nudge.Trigger
}

func walPath(dbPath string) string { return dbPath + ".creates" }

// openWAL replays the create log into bbolt, truncates it and keeps it open for appends.
func (tg *Triggers) openWAL() error {
	path := walPath(tg.db.path)
	if err := tg.replayWAL(path); err != nil {
		return fmt.Errorf("replay %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("open create log: %w", err)
	}
	tg.wal.f, tg.wal.pending = f, map[string]nudge.Trigger{}
	return nil
}

func (tg *Triggers) replayWAL(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var e walEntry
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Trigger.TriggerID == "" {
			continue // a torn last line (power loss): its trigger was never answered
		}
		if _, _, err := tg.CreateTrigger(e.Trigger, e.Audit); err != nil {
			return err
		}
	}
	return sc.Err()
}

// CreateTriggerQuick is CreateTrigger for the hot path: it returns once the new trigger
// is in the create log (safe against kill -9), and commits it to bbolt in the background
// (write-behind, in order with later writes). A known id returns the stored record and
// created=false, as CreateTrigger does.
func (tg *Triggers) CreateTriggerQuick(t nudge.Trigger, audit *nudge.AuditRecord) (nudge.Trigger, bool, error) {
	if err := need("trigger id", t.TriggerID); err != nil {
		return nudge.Trigger{}, false, fmt.Errorf("create trigger: %w", err)
	}
	if got, err := tg.GetTrigger(t.TriggerID); err == nil {
		return got, false, nil
	} else if !errors.Is(err, ErrNotFound) {
		return nudge.Trigger{}, false, err
	}
	line, err := json.Marshal(walEntry{Trigger: t, Audit: audit})
	if err != nil {
		return nudge.Trigger{}, false, fmt.Errorf("create trigger: %w", err)
	}
	w := &tg.wal
	w.mu.Lock()
	if got, ok := w.pending[t.TriggerID]; ok {
		w.mu.Unlock()
		return got, false, nil
	}
	// Committed (and settled) between the look above and the lock?
	if got, err := tg.committedTrigger(t.TriggerID); err == nil {
		w.mu.Unlock()
		return got, false, nil
	}
	if w.f == nil {
		w.mu.Unlock()
		return nudge.Trigger{}, false, fmt.Errorf("create trigger: %w", ErrClosed)
	}
	if err := tg.db.Unavailable(); err != nil {
		w.mu.Unlock()
		return nudge.Trigger{}, false, fmt.Errorf("create trigger: %w: %v", ErrUnavailable, err)
	}
	line = append(line, '\n')
	if n, err := w.f.Write(line); err != nil || n != len(line) {
		// Cut a partial line off, or the next line would be glued to it and both lost
		// at replay. If even that fails, the log stays refused until it works.
		if terr := w.f.Truncate(w.size); terr != nil {
			err = errors.Join(err, terr)
		}
		w.mu.Unlock()
		return nudge.Trigger{}, false, fmt.Errorf("create trigger: %w: write create log: %v", ErrUnavailable, err)
	}
	w.size += int64(len(line))
	w.pending[t.TriggerID] = t
	w.mu.Unlock()
	tg.db.enqueue(laterOp{name: "create trigger " + t.TriggerID, created: t.TriggerID, fn: func(tx *bolt.Tx) error {
		got, created, err := tg.createTriggerTx(tx, t)
		if err != nil || !created || audit == nil {
			return err
		}
		_, err = tg.db.audit.appendAuditTx(tx, []nudge.AuditRecord{auditFor(*audit, &got)})
		return err
	}})
	return t, true, nil
}

func (tg *Triggers) committedTrigger(id string) (nudge.Trigger, error) {
	var t nudge.Trigger
	err := tg.db.view("get trigger "+id, func(tx *bolt.Tx) (err error) {
		t, _, err = lookupTrigger(tx, id)
		return err
	})
	return t, err
}

// pendingTrigger returns a trigger that is in the create log but not yet in bbolt.
func (tg *Triggers) pendingTrigger(id string) (nudge.Trigger, bool) {
	tg.wal.mu.Lock()
	defer tg.wal.mu.Unlock()
	t, ok := tg.wal.pending[id]
	return t, ok
}

// settleWAL forgets pending creates that bbolt now holds (or that failed for good) and,
// when none is left, empties the log. It runs on the write-behind goroutine after each
// commit; creates whose commit failed are not in applied and stay in the log.
func (tg *Triggers) settleWAL(applied []laterOp) {
	w := &tg.wal
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, op := range applied {
		if op.created != "" {
			delete(w.pending, op.created)
		}
	}
	if len(w.pending) == 0 && w.f != nil && w.size > 0 {
		if w.f.Truncate(0) == nil { // an unemptied log is replayed harmlessly
			w.size = 0
		}
	}
}

func (tg *Triggers) closeWAL() {
	tg.wal.mu.Lock()
	defer tg.wal.mu.Unlock()
	if tg.wal.f != nil {
		tg.wal.f.Close()
		tg.wal.f = nil
	}
}
