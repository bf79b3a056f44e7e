package store

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nudgehq/nudge"
	bolt "go.etcd.io/bbolt"
)

// Triggers is the store's triggers: the records (CreateTrigger, GetTrigger,
// UpdateTrigger, ListTriggers), their delivery attempts (AddAttempt, Attempts), the
// create log behind CreateTriggerQuick and the write-behind writes of a trigger
// (UpdateTriggerLater, PutTriggerLater). A trigger's audit records go to the DB's
// AuditLog in the same transaction. It owns the create log (wal.go): Open replays and
// opens it, the DB's writer settles it after each commit, Close closes it. Reached as
// part of a DB (its methods are the DB's); it has no lifecycle of its own.
type Triggers struct {
	db          *DB
	wal         wal           // the create log and the creates it holds that bbolt does not yet
	triggerPuts atomic.Uint64 // records written by PutTriggerLater (tests: superseded ones are not)
}

// TriggerFilter selects triggers for ListTriggers. Zero fields match everything.
type TriggerFilter struct {
	RuntimeID string
	ThreadID  string
	Workspace string // matches Trigger.WorkspaceID
	Agent     string
	OpenOnly  bool      // only triggers not Closed; walks the open index, not every trigger
	Since     time.Time // CreatedAt at or after Since
	Limit     int       // at most Limit results; 0 means no limit
	Newest    bool      // with Limit: the newest Limit matches instead of the oldest
}

// Match reports whether t passes the filter (all but Limit and Newest).
func (f *TriggerFilter) Match(t *nudge.Trigger) bool { return f.match(t) }

func (f *TriggerFilter) match(t *nudge.Trigger) bool {
	return (f.RuntimeID == "" || t.RuntimeID == f.RuntimeID) &&
		(f.ThreadID == "" || t.ThreadID == f.ThreadID) &&
		(f.Workspace == "" || t.WorkspaceID == f.Workspace) &&
		(f.Agent == "" || t.Agent == f.Agent) &&
		(!f.OpenOnly || !t.Closed) &&
		(f.Since.IsZero() || !t.CreatedAt.Before(f.Since))
}

// CreateTrigger stores t unless a trigger with t.TriggerID exists, in one transaction.
// If it exists, CreateTrigger returns the stored record and created=false and appends
// nothing. Otherwise it stores t (a zero CreatedAt or UpdatedAt is set to now), appends
// audit if it is non-nil, and returns created=true. Of concurrent callers with the same
// id exactly one gets created=true. Empty TriggerID, ThreadID, RuntimeID and Workspace
// of the audit record are filled from t.
func (tg *Triggers) CreateTrigger(t nudge.Trigger, audit *nudge.AuditRecord) (got nudge.Trigger, created bool, err error) {
	if err := need("trigger id", t.TriggerID); err != nil {
		return nudge.Trigger{}, false, fmt.Errorf("create trigger: %w", err)
	}
	err = tg.db.update("create trigger "+t.TriggerID, func(tx *bolt.Tx) error {
		var txErr error
		got, created, txErr = tg.createTriggerTx(tx, t)
		if txErr != nil || !created || audit == nil {
			return txErr
		}
		_, txErr = tg.db.audit.appendAuditTx(tx, []nudge.AuditRecord{auditFor(*audit, &got)})
		return txErr
	})
	if err != nil {
		return nudge.Trigger{}, false, err
	}
	return got, created, nil
}

func (tg *Triggers) createTriggerTx(tx *bolt.Tx, t nudge.Trigger) (nudge.Trigger, bool, error) {
	ids := tx.Bucket(bucketTriggerIDs)
	if seqb := ids.Get([]byte(t.TriggerID)); seqb != nil {
		old, err := getTriggerBySeq(tx, seqb)
		return old, false, err
	}
	now := tg.db.now()
	if t.CreatedAt.IsZero() {
		t.CreatedAt = now
	}
	if t.UpdatedAt.IsZero() {
		t.UpdatedAt = now
	}
	triggers := tx.Bucket(bucketTriggers)
	triggers.FillPercent = appendFill
	seq, err := triggers.NextSequence()
	if err != nil {
		return nudge.Trigger{}, false, err
	}
	key := u64(seq)
	if err := putJSON(triggers, key, t); err != nil {
		return nudge.Trigger{}, false, err
	}
	if err := ids.Put([]byte(t.TriggerID), key); err != nil {
		return nudge.Trigger{}, false, err
	}
	return t, true, setOpen(tx, key, t)
}

// setOpen keeps the open index in step with t.Closed.
func setOpen(tx *bolt.Tx, key []byte, t nudge.Trigger) error {
	open := tx.Bucket(bucketOpen)
	if t.Closed {
		return open.Delete(key)
	}
	return open.Put(key, []byte(t.TriggerID))
}

func getTriggerBySeq(tx *bolt.Tx, seqb []byte) (nudge.Trigger, error) {
	var t nudge.Trigger
	ok, err := getJSON(tx.Bucket(bucketTriggers), seqb, &t)
	if err == nil && !ok {
		err = fmt.Errorf("index points at missing trigger seq %d", binary.BigEndian.Uint64(seqb))
	}
	return t, err
}

// lookupTrigger returns the trigger id and its key, or ErrNotFound.
func lookupTrigger(tx *bolt.Tx, id string) (nudge.Trigger, []byte, error) {
	seqb := tx.Bucket(bucketTriggerIDs).Get([]byte(id))
	if seqb == nil {
		if aged := agedOut(tx, id); aged != nil {
			return nudge.Trigger{}, nil, aged
		}
		return nudge.Trigger{}, nil, ErrNotFound
	}
	t, err := getTriggerBySeq(tx, seqb)
	return t, append([]byte(nil), seqb...), err
}

// GetTrigger returns the trigger id, or ErrNotFound: an *AgedOutError if retention
// removed it and its tombstone is kept.
func (tg *Triggers) GetTrigger(id string) (nudge.Trigger, error) {
	if t, ok := tg.pendingTrigger(id); ok {
		return t, nil
	}
	var t nudge.Trigger
	err := tg.db.view("get trigger "+id, func(tx *bolt.Tx) (err error) {
		t, _, err = lookupTrigger(tx, id)
		return err
	})
	return t, err
}

// UpdateTrigger reads the trigger id, lets fn change it, stores it and appends audit,
// all in one transaction. If fn returns an error nothing is written and UpdateTrigger
// returns that error (wrapped). fn must not change TriggerID. UpdatedAt is set to now.
// Setting Closed removes the trigger from the open index. Audit records get empty
// TriggerID, ThreadID, RuntimeID and Workspace filled from the updated trigger.
func (tg *Triggers) UpdateTrigger(id string, fn func(*nudge.Trigger) error, audit ...nudge.AuditRecord) (nudge.Trigger, error) {
	var t nudge.Trigger
	err := tg.db.update("update trigger "+id, func(tx *bolt.Tx) (err error) {
		t, err = tg.updateTriggerTx(tx, id, fn, audit)
		return err
	})
	if err != nil {
		return nudge.Trigger{}, err
	}
	return t, nil
}

// updateTriggerTx is UpdateTrigger's body, shared with UpdateTriggerLater.
func (tg *Triggers) updateTriggerTx(tx *bolt.Tx, id string, fn func(*nudge.Trigger) error, audit []nudge.AuditRecord) (nudge.Trigger, error) {
	t, key, err := lookupTrigger(tx, id)
	if err != nil {
		return nudge.Trigger{}, err
	}
	if err := fn(&t); err != nil {
		return nudge.Trigger{}, err
	}
	if t.TriggerID != id {
		return nudge.Trigger{}, fmt.Errorf("trigger id changed to %q: %w", t.TriggerID, ErrInvalid)
	}
	t.UpdatedAt = tg.db.now()
	if err := tg.storeTriggerTx(tx, key, t); err != nil {
		return nudge.Trigger{}, err
	}
	return t, tg.appendTriggerAudit(tx, &t, audit)
}

func (tg *Triggers) storeTriggerTx(tx *bolt.Tx, key []byte, t nudge.Trigger) error {
	if err := putJSON(tx.Bucket(bucketTriggers), key, t); err != nil {
		return err
	}
	return setOpen(tx, key, t)
}

func (tg *Triggers) appendTriggerAudit(tx *bolt.Tx, t *nudge.Trigger, audit []nudge.AuditRecord) error {
	if len(audit) == 0 {
		return nil
	}
	recs := make([]nudge.AuditRecord, len(audit))
	for i := range audit {
		recs[i] = auditFor(audit[i], t)
	}
	_, err := tg.db.audit.appendAuditTx(tx, recs)
	return err
}

// auditFor fills a's empty trigger-related fields from t.
func auditFor(a nudge.AuditRecord, t *nudge.Trigger) nudge.AuditRecord {
	if a.TriggerID == "" {
		a.TriggerID = t.TriggerID
	}
	if a.ThreadID == "" {
		a.ThreadID = t.ThreadID
	}
	if a.RuntimeID == "" {
		a.RuntimeID = t.RuntimeID
	}
	if a.Workspace == "" {
		a.Workspace = t.WorkspaceID
	}
	return a
}

// ListTriggers returns the triggers matching f in creation order. With OpenOnly it
// walks only the open index, so restart recovery costs O(open triggers).
func (tg *Triggers) ListTriggers(f TriggerFilter) ([]nudge.Trigger, error) {
	var out []nudge.Trigger
	err := tg.db.view("list triggers", func(tx *bolt.Tx) error {
		var err error
		out, err = listTriggersTx(tx, &f)
		return err
	})
	return out, err
}

func listTriggersTx(tx *bolt.Tx, f *TriggerFilter) ([]nudge.Trigger, error) {
	triggers := tx.Bucket(bucketTriggers)
	walk := triggers
	if f.OpenOnly {
		walk = tx.Bucket(bucketOpen)
	}
	var out []nudge.Trigger
	err := scan(walk.Cursor(), nil, f.Newest, func(k, v []byte) (bool, error) {
		if f.OpenOnly {
			v = triggers.Get(k)
		}
		var t nudge.Trigger
		if err := json.Unmarshal(v, &t); err != nil {
			return false, fmt.Errorf("decode trigger %x: %w", k, err)
		}
		if f.match(&t) {
			out = append(out, t)
		}
		return f.Limit > 0 && len(out) >= f.Limit, nil
	})
	if f.Newest {
		reverse(out)
	}
	return out, err
}

// scan walks c from start (nil: the first key; with backward, the last key) and calls fn
// for each pair until fn says stop or returns an error.
func scan(c *bolt.Cursor, start []byte, backward bool, fn func(k, v []byte) (stop bool, err error)) error {
	var k, v []byte
	switch {
	case backward:
		k, v = c.Last()
	case start != nil:
		k, v = c.Seek(start)
	default:
		k, v = c.First()
	}
	for ; k != nil; k, v = step(c, backward) {
		if stop, err := fn(k, v); stop || err != nil {
			return err
		}
	}
	return nil
}

func step(c *bolt.Cursor, backward bool) ([]byte, []byte) {
	if backward {
		return c.Prev()
	}
	return c.Next()
}

func reverse[T any](s []T) {
	for i, j := 0, len(s)-1; i < j; i, j = i+1, j-1 {
		s[i], s[j] = s[j], s[i]
	}
}

// UpdateTriggerLater queues UpdateTrigger.
func (tg *Triggers) UpdateTriggerLater(id string, fn func(*nudge.Trigger) error, audit ...nudge.AuditRecord) {
	tg.db.enqueue(laterOp{name: "update trigger " + id, fn: func(tx *bolt.Tx) error {
		_, err := tg.updateTriggerTx(tx, id, fn, audit)
		return err
	}})
}

// PutTriggerLater queues a write of the whole record t (stored as t with UpdatedAt set to
// the store's now, as UpdateTrigger does) and its audit records, for a trigger that
// exists (created, or in the create log ahead of this write): the write-behind copy of a
// receipt kept in memory. When a later PutTriggerLater of the same trigger goes in the
// same batch, only the last record is written; every one's audit records are appended,
// in order, filled from its own record. A trigger that does not exist fails the write
// (ErrNotFound, reported as LaterFailed), as UpdateTriggerLater does.
func (tg *Triggers) PutTriggerLater(t nudge.Trigger, audit ...nudge.AuditRecord) {
	id := t.TriggerID
	if id == "" {
		tg.db.later.report("put trigger", fmt.Errorf("put trigger: %w", ErrInvalid))
		return
	}
	exists := func(tx *bolt.Tx) ([]byte, error) {
		seqb := tx.Bucket(bucketTriggerIDs).Get([]byte(id))
		if seqb == nil {
			return nil, ErrNotFound
		}
		return seqb, nil
	}
	tg.db.enqueue(laterOp{name: "update trigger " + id, key: "trigger\x00" + id,
		fn: func(tx *bolt.Tx) error {
			key, err := exists(tx)
			if err != nil {
				return err
			}
			tg.triggerPuts.Add(1)
			t := t
			t.UpdatedAt = tg.db.now()
			if err := tg.storeTriggerTx(tx, append([]byte(nil), key...), t); err != nil {
				return err
			}
			return tg.appendTriggerAudit(tx, &t, audit)
		},
		light: func(tx *bolt.Tx) error {
			if _, err := exists(tx); err != nil {
				return err
			}
			return tg.appendTriggerAudit(tx, &t, audit)
		}})
}
