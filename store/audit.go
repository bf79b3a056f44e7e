package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nudgehq/nudge"
	bolt "go.etcd.io/bbolt"
)

// The audit log is append-only and hash-chained. Record n is stored under key n (8 bytes
// big-endian, from the bucket's NextSequence) as its canonical JSON: the output of
// json.Marshal of the AuditRecord. Its Hash is
//
//	hex(SHA-256(PrevHash || canonical JSON of the record with Hash ""))
//
// and its PrevHash is the Hash of record n-1 ("" for record 1). The head (last seq and
// hash) is kept in the meta bucket under a reserved key, so deleting the last records
// is detected too. Anyone who can write the file can still rewrite the whole chain; to
// detect that, keep AuditHead's hash somewhere else.

// AuditLog is the store's audit log (see above): AppendAudit, AppendAuditLater, Audit,
// AuditHead and VerifyAudit. Triggers append to it in their own transactions
// (appendAuditTx), so a trigger and its audit records commit together. Its state lives
// in the file. Reached as part of a DB (its methods are the DB's).
type AuditLog struct{ db *DB }

// auditHeadKey holds the last seq (8 bytes BE) followed by its hash.
var auditHeadKey = []byte(reservedMeta + "audit_head")

// AuditFilter selects audit records. Zero fields match everything.
type AuditFilter struct {
	TriggerID string
	RuntimeID string
	ThreadID  string
	Workspace string
	Event     string
	Since     time.Time // Time at or after Since
	Until     time.Time // Time before Until
	AfterSeq  uint64    // only records with Seq > AfterSeq (for tailing)
	Limit     int       // at most Limit records; 0 means no limit
	Newest    bool      // with Limit: the newest Limit matches instead of the oldest
	// Host asks for a fleet host's copy of its records on the hub (docs/hub.md); the store
	// holds only this host's, and leaves Host to the fleet's layer above it.
	Host string
}

// Match reports whether r passes the filter (all but Limit, Newest and Host).
func (f *AuditFilter) Match(r *nudge.AuditRecord) bool { return f.match(r) }

func (f *AuditFilter) match(r *nudge.AuditRecord) bool {
	return (f.TriggerID == "" || r.TriggerID == f.TriggerID) &&
		(f.RuntimeID == "" || r.RuntimeID == f.RuntimeID) &&
		(f.ThreadID == "" || r.ThreadID == f.ThreadID) &&
		(f.Workspace == "" || r.Workspace == f.Workspace) &&
		(f.Event == "" || r.Event == f.Event) &&
		(f.Since.IsZero() || !r.Time.Before(f.Since)) &&
		(f.Until.IsZero() || r.Time.Before(f.Until))
}

// AppendAudit appends recs in one transaction and returns them as stored: Seq assigned,
// Time set to now if zero (and made UTC), PrevHash and Hash filled in. Records queued
// before the call (AppendAuditLater, UpdateTriggerLater, ...) are committed first, so the
// log's order is causal: what happened before this call has a lower Seq.
func (al *AuditLog) AppendAudit(recs ...nudge.AuditRecord) ([]nudge.AuditRecord, error) {
	al.db.Flush()
	var out []nudge.AuditRecord
	err := al.db.update("append audit", func(tx *bolt.Tx) error {
		var err error
		out, err = al.appendAuditTx(tx, recs)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (al *AuditLog) appendAuditTx(tx *bolt.Tx, recs []nudge.AuditRecord) ([]nudge.AuditRecord, error) {
	b, meta := tx.Bucket(bucketAudit), tx.Bucket(bucketMeta)
	b.FillPercent = appendFill
	_, prev := parseHead(meta.Get(auditHeadKey))
	out := make([]nudge.AuditRecord, len(recs))
	for i, r := range recs {
		seq, err := b.NextSequence()
		if err != nil {
			return nil, err
		}
		if r.Time.IsZero() {
			r.Time = al.db.now()
		}
		r.Seq, r.Time, r.PrevHash = seq, r.Time.UTC(), prev
		val, err := sealAudit(&r)
		if err != nil {
			return nil, err
		}
		if err := b.Put(u64(seq), val); err != nil {
			return nil, err
		}
		out[i], prev = r, r.Hash
	}
	if len(out) == 0 {
		return out, nil
	}
	return out, meta.Put(auditHeadKey, append(u64(out[len(out)-1].Seq), prev...))
}

// sealAudit sets r.Hash and returns r's canonical JSON.
func sealAudit(r *nudge.AuditRecord) ([]byte, error) {
	r.Hash = ""
	body, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encode audit record: %w", err)
	}
	r.Hash = chainHash(r.PrevHash, body)
	// body ends with `"hash":""}`: splice the hash in rather than encode again.
	const tail = `""}`
	if !bytes.HasSuffix(body, []byte(tail)) {
		return nil, fmt.Errorf("encode audit record: unexpected encoding")
	}
	val := append(body[:len(body)-len(tail)], '"')
	val = append(val, r.Hash...)
	return append(val, tail[1:]...), nil
}

// chainHash is hex(SHA-256(prev || body)).
func chainHash(prev string, body []byte) string {
	h := sha256.New()
	h.Write([]byte(prev))
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

func parseHead(v []byte) (seq uint64, hash string) {
	if len(v) < 8 {
		return 0, ""
	}
	return binary.BigEndian.Uint64(v[:8]), string(v[8:])
}

// AuditHead returns the seq and hash of the last audit record (0 and "" if none).
// Recording the hash elsewhere lets a later VerifyAudit also catch a rewritten chain.
func (al *AuditLog) AuditHead() (seq uint64, hash string, err error) {
	err = al.db.view("audit head", func(tx *bolt.Tx) error {
		seq, hash = parseHead(tx.Bucket(bucketMeta).Get(auditHeadKey))
		return nil
	})
	return seq, hash, err
}

// Audit returns the records matching f in Seq order.
func (al *AuditLog) Audit(f AuditFilter) ([]nudge.AuditRecord, error) {
	var out []nudge.AuditRecord
	err := al.db.view("audit", func(tx *bolt.Tx) error {
		var start []byte
		if f.AfterSeq > 0 {
			start = u64(f.AfterSeq + 1)
		}
		return scan(tx.Bucket(bucketAudit).Cursor(), start, f.Newest, func(k, v []byte) (bool, error) {
			if binary.BigEndian.Uint64(k) <= f.AfterSeq {
				return true, nil
			}
			var r nudge.AuditRecord
			if err := json.Unmarshal(v, &r); err != nil {
				return false, fmt.Errorf("decode audit record %x: %w", k, err)
			}
			if f.match(&r) {
				out = append(out, r)
			}
			return f.Limit > 0 && len(out) >= f.Limit, nil
		})
	})
	if f.Newest {
		reverse(out)
	}
	return out, err
}

// AppendAuditLater queues AppendAudit; the records keep their order in the chain.
func (al *AuditLog) AppendAuditLater(recs ...nudge.AuditRecord) {
	al.db.enqueue(laterOp{name: "append audit", fn: func(tx *bolt.Tx) error {
		_, err := al.appendAuditTx(tx, recs)
		return err
	}})
}
