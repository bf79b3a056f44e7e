package store

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/nudgehq/nudge"
	bolt "go.etcd.io/bbolt"
)

// Runtimes is the store's runtimes (nudge.Runtime, keyed by RuntimeID): synchronous
// writes (PutRuntime, CreateRuntime, DeleteRuntime), reads, and the write-behind
// PutRuntimeLater and PutRuntimeLazy. It holds no state of its own beyond the DB's file
// and queue. Reached as part of a DB (its methods are the DB's).
type Runtimes struct{ db *DB }

// PutRuntime creates or replaces the runtime r.RuntimeID. A zero CreatedAt keeps the
// stored one (or is set to now for a new record).
func (rs *Runtimes) PutRuntime(r nudge.Runtime) error {
	if err := need("runtime id", r.RuntimeID); err != nil {
		return fmt.Errorf("put runtime: %w", err)
	}
	return rs.db.update("put runtime "+r.RuntimeID, func(tx *bolt.Tx) error {
		return rs.putRuntimeTx(tx.Bucket(bucketRuntimes), r)
	})
}

// CreateRuntime stores r only if no runtime with its id exists; otherwise ErrExists.
func (rs *Runtimes) CreateRuntime(r nudge.Runtime) error {
	if err := need("runtime id", r.RuntimeID); err != nil {
		return fmt.Errorf("create runtime: %w", err)
	}
	return rs.db.update("create runtime "+r.RuntimeID, func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketRuntimes)
		if b.Get([]byte(r.RuntimeID)) != nil {
			return ErrExists
		}
		return rs.putRuntimeTx(b, r)
	})
}

func (rs *Runtimes) putRuntimeTx(b *bolt.Bucket, r nudge.Runtime) error {
	if r.CreatedAt.IsZero() {
		var old nudge.Runtime
		ok, err := getJSON(b, []byte(r.RuntimeID), &old)
		if err != nil {
			return err
		}
		r.CreatedAt = old.CreatedAt
		if !ok {
			r.CreatedAt = rs.db.now()
		}
	}
	return putJSON(b, []byte(r.RuntimeID), r)
}

// GetRuntime returns the runtime id, or ErrNotFound.
func (rs *Runtimes) GetRuntime(id string) (nudge.Runtime, error) {
	var r nudge.Runtime
	err := rs.db.view("get runtime "+id, func(tx *bolt.Tx) error {
		ok, err := getJSON(tx.Bucket(bucketRuntimes), []byte(id), &r)
		if err == nil && !ok {
			err = ErrNotFound
		}
		return err
	})
	return r, err
}

// ListRuntimes returns every runtime ordered by CreatedAt (then RuntimeID).
func (rs *Runtimes) ListRuntimes() ([]nudge.Runtime, error) {
	var out []nudge.Runtime
	err := rs.db.view("list runtimes", func(tx *bolt.Tx) error {
		return forEachJSON(tx.Bucket(bucketRuntimes), func(r nudge.Runtime) { out = append(out, r) })
	})
	sortRuntimes(out)
	return out, err
}

// sortRuntimes orders runtimes by CreatedAt, then RuntimeID.
func sortRuntimes(out []nudge.Runtime) {
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].RuntimeID < out[j].RuntimeID
	})
}

// DeleteRuntime removes the runtime id, or returns ErrNotFound. Its triggers and audit
// records stay.
func (rs *Runtimes) DeleteRuntime(id string) error {
	return rs.db.update("delete runtime "+id, func(tx *bolt.Tx) error {
		return deleteKey(tx.Bucket(bucketRuntimes), []byte(id))
	})
}

// deleteKey deletes key from b, or returns ErrNotFound if it is absent.
func deleteKey(b *bolt.Bucket, key []byte) error {
	if b.Get(key) == nil {
		return ErrNotFound
	}
	return b.Delete(key)
}

// forEachJSON decodes every value of b, in key order, and passes it to fn.
func forEachJSON[T any](b *bolt.Bucket, fn func(T)) error {
	return b.ForEach(func(k, v []byte) error {
		var x T
		if err := json.Unmarshal(v, &x); err != nil {
			return fmt.Errorf("decode %q: %w", k, err)
		}
		fn(x)
		return nil
	})
}

// PutRuntimeLater queues PutRuntime.
func (rs *Runtimes) PutRuntimeLater(r nudge.Runtime) {
	if r.RuntimeID == "" {
		rs.db.later.report("put runtime", fmt.Errorf("put runtime: %w", ErrInvalid))
		return
	}
	rs.db.enqueue(laterOp{name: "put runtime " + r.RuntimeID, key: "runtime\x00" + r.RuntimeID, fn: func(tx *bolt.Tx) error {
		return rs.putRuntimeTx(tx.Bucket(bucketRuntimes), r)
	}})
}

// PutRuntimeLazy queues PutRuntime as a lazy write: for a change of the fields a daemon
// recomputes at start (readiness, summary, input line), which may reach the disk up to a
// second later unless another write commits first.
func (rs *Runtimes) PutRuntimeLazy(r nudge.Runtime) {
	if r.RuntimeID == "" {
		rs.db.later.report("put runtime", fmt.Errorf("put runtime: %w", ErrInvalid))
		return
	}
	rs.db.enqueue(laterOp{name: "put runtime " + r.RuntimeID, key: "runtime\x00" + r.RuntimeID, lazy: true, fn: func(tx *bolt.Tx) error {
		return rs.putRuntimeTx(tx.Bucket(bucketRuntimes), r)
	}})
}
