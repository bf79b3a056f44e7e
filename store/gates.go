package store

import (
	"bytes"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Gate is the durable state of one per-thread trigger gate (seed 000 §14), so a restart
// of the daemon neither unblocks a blocked thread nor resets a rate-limit window: a rate
// limit's recent deliveries, or a loop guard's counters and block. Keys are the
// pipeline's (workspace, agent and thread); the store does not interpret them.
type Gate struct {
	Kind      string      `json:"kind"`              // GateRate, GateRuntimeRate or GateLoop
	Key       string      `json:"key"`               // the gate's key within its kind
	Hits      []time.Time `json:"hits,omitempty"`    // rate: deliveries still within the window
	Turns     int         `json:"turns,omitempty"`   // loop: deliveries without progress
	Same      int         `json:"same,omitempty"`    // loop: identical prompts in a row
	Last      []byte      `json:"last,omitempty"`    // loop: SHA-256 of the last prompt
	Blocked   string      `json:"blocked,omitempty"` // loop: why the thread is blocked ("" = it is not)
	UpdatedAt time.Time   `json:"updated_at"`
}

// Gates is the store's trigger gates (Gate, keyed by kind and key): PutGate and the
// write-behind PutGateLater, DeleteGateLater, DeleteGatesLater, and ListGates. Its state
// lives in the file. Reached as part of a DB (its methods are the DB's).
type Gates struct{ db *DB }

// Gate kinds.
const (
	GateRate        = "rate"         // a thread's rate limit
	GateRuntimeRate = "runtime_rate" // a runtime's rate limit, over all its threads
	GateLoop        = "loop"
)

func gateKey(kind, key string) []byte { return []byte(kind + "\x00" + key) }

// PutGateLater queues a gate's new state (write-behind: a kill -9 within milliseconds of
// a delivery can lose that one delivery's count, never a block written with PutGate).
func (gs *Gates) PutGateLater(g Gate) {
	if g.Kind == "" || g.Key == "" {
		gs.db.later.report("put gate", fmt.Errorf("put gate: %w", ErrInvalid))
		return
	}
	gs.db.enqueue(laterOp{name: "put gate " + g.Kind, key: "gate\x00" + string(gateKey(g.Kind, g.Key)), fn: func(tx *bolt.Tx) error {
		return putJSON(tx.Bucket(bucketGates), gateKey(g.Kind, g.Key), g)
	}})
}

// PutGate stores a gate's state and returns once it is durable (a loop-guard block).
// Writes queued before it with PutGateLater are committed first.
func (gs *Gates) PutGate(g Gate) error {
	if g.Kind == "" || g.Key == "" {
		return fmt.Errorf("put gate: %w", ErrInvalid)
	}
	gs.PutGateLater(g)
	gs.db.Flush()
	return nil
}

// DeleteGateLater queues the removal of one gate.
func (gs *Gates) DeleteGateLater(kind, key string) {
	gs.db.enqueue(laterOp{name: "delete gate " + kind, fn: func(tx *bolt.Tx) error {
		return tx.Bucket(bucketGates).Delete(gateKey(kind, key))
	}})
}

// DeleteGatesLater queues the removal of every gate of kind whose key starts with prefix
// (a thread's, or all of an agent's threads).
func (gs *Gates) DeleteGatesLater(kind, prefix string) {
	gs.db.enqueue(laterOp{name: "delete gates " + kind, fn: func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketGates).Cursor()
		p := gateKey(kind, prefix)
		for k, _ := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, _ = c.Seek(p) {
			if err := c.Delete(); err != nil {
				return err
			}
		}
		return nil
	}})
}

// ListGates returns every stored gate, by kind then key.
func (gs *Gates) ListGates() ([]Gate, error) {
	var out []Gate
	err := gs.db.view("list gates", func(tx *bolt.Tx) error {
		return forEachJSON(tx.Bucket(bucketGates), func(g Gate) { out = append(out, g) })
	})
	return out, err
}
