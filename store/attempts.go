package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"

	"github.com/nudgehq/nudge"
	bolt "go.etcd.io/bbolt"
)

// attemptKey is trigger_id followed by n as 8 bytes big-endian. A key belongs to id
// exactly when it has prefix id and length len(id)+8.
func attemptKey(id string, n int) []byte {
	k := make([]byte, 0, len(id)+8)
	k = append(k, id...)
	return binary.BigEndian.AppendUint64(k, uint64(n))
}

// AddAttempt records a delivery attempt of a.TriggerID, replacing the attempt with the
// same N (so an attempt can be stored when it starts and again when it ends). N 0 means
// the next number after the last stored attempt. The trigger must exist (else
// ErrNotFound); its Attempts count is raised to N if lower, in the same transaction.
func (tg *Triggers) AddAttempt(a nudge.Attempt) error {
	if err := need("trigger id", a.TriggerID); err != nil {
		return fmt.Errorf("add attempt: %w", err)
	}
	if a.N < 0 {
		return fmt.Errorf("add attempt: negative n %d: %w", a.N, ErrInvalid)
	}
	return tg.db.update("add attempt "+a.TriggerID, func(tx *bolt.Tx) error {
		t, key, err := lookupTrigger(tx, a.TriggerID)
		if err != nil {
			return err
		}
		b := tx.Bucket(bucketAttempts)
		if a.N == 0 {
			a.N = lastAttempt(b, a.TriggerID) + 1
		}
		if err := putJSON(b, attemptKey(a.TriggerID, a.N), a); err != nil {
			return err
		}
		if t.Attempts >= a.N {
			return nil
		}
		t.Attempts, t.UpdatedAt = a.N, tg.db.now()
		return tg.storeTriggerTx(tx, key, t)
	})
}

// lastAttempt returns the highest attempt number stored for id, or 0.
func lastAttempt(b *bolt.Bucket, id string) int {
	c := b.Cursor()
	k, _ := c.Seek(attemptKey(id, 0))
	last := 0
	for ; k != nil && bytes.HasPrefix(k, []byte(id)); k, _ = c.Next() {
		if len(k) == len(id)+8 {
			last = int(binary.BigEndian.Uint64(k[len(id):]))
		}
	}
	return last
}

// Attempts returns the attempts of triggerID ordered by N (none: an empty slice and no
// error, whether or not the trigger exists).
func (tg *Triggers) Attempts(triggerID string) ([]nudge.Attempt, error) {
	var out []nudge.Attempt
	err := tg.db.view("attempts "+triggerID, func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketAttempts).Cursor()
		prefix := []byte(triggerID)
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			if len(k) != len(prefix)+8 {
				continue
			}
			var a nudge.Attempt
			if err := json.Unmarshal(v, &a); err != nil {
				return fmt.Errorf("decode attempt %q: %w", k, err)
			}
			out = append(out, a)
		}
		return nil
	})
	return out, err
}
