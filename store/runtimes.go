package store

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/nudgehq/nudge"
	bolt "go.etcd.io/bbolt"
)

// PutRuntime creates or replaces the runtime r.RuntimeID. A zero CreatedAt keeps the
// stored one (or is set to now for a new record).
func (db *DB) PutRuntime(r nudge.Runtime) error {
	if err := need("runtime id", r.RuntimeID); err != nil {
		return fmt.Errorf("put runtime: %w", err)
	}
	return db.update("put runtime "+r.RuntimeID, func(tx *bolt.Tx) error {
		return db.putRuntimeTx(tx.Bucket(bucketRuntimes), r)
	})
}

// CreateRuntime stores r only if no runtime with its id exists; otherwise ErrExists.
func (db *DB) CreateRuntime(r nudge.Runtime) error {
	if err := need("runtime id", r.RuntimeID); err != nil {
		return fmt.Errorf("create runtime: %w", err)
	}
	return db.update("create runtime "+r.RuntimeID, func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketRuntimes)
		if b.Get([]byte(r.RuntimeID)) != nil {
			return ErrExists
		}
		return db.putRuntimeTx(b, r)
	})
}

func (db *DB) putRuntimeTx(b *bolt.Bucket, r nudge.Runtime) error {
	if r.CreatedAt.IsZero() {
		var old nudge.Runtime
		ok, err := getJSON(b, []byte(r.RuntimeID), &old)
		if err != nil {
			return err
		}
		r.CreatedAt = old.CreatedAt
		if !ok {
			r.CreatedAt = db.now()
		}
	}
	return putJSON(b, []byte(r.RuntimeID), r)
}

// GetRuntime returns the runtime id, or ErrNotFound.
func (db *DB) GetRuntime(id string) (nudge.Runtime, error) {
	var r nudge.Runtime
	err := db.view("get runtime "+id, func(tx *bolt.Tx) error {
		ok, err := getJSON(tx.Bucket(bucketRuntimes), []byte(id), &r)
		if err == nil && !ok {
			err = ErrNotFound
		}
		return err
	})
	return r, err
}

// ListRuntimes returns every runtime ordered by CreatedAt (then RuntimeID).
func (db *DB) ListRuntimes() ([]nudge.Runtime, error) {
	var out []nudge.Runtime
	err := db.view("list runtimes", func(tx *bolt.Tx) error {
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
func (db *DB) DeleteRuntime(id string) error {
	return db.update("delete runtime "+id, func(tx *bolt.Tx) error {
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
