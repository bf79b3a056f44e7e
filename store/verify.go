package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"

	"github.com/nudgehq/nudge"
	bolt "go.etcd.io/bbolt"
)

// VerifyAudit walks the audit log kept in the store in order and checks the chain, from
// its first kept record on: after retention sealed older records into segments
// (auditseal.go), the first kept record must follow the recorded base and chain to its
// hash. It returns the number of records checked and, if the chain is broken, a
// *ChainError whose Seq is the first bad record (for a deleted record, the missing seq).
// It detects any changed byte of a record, a deleted record (a gap, or a missing tail),
// reordered records, and records added without going through AppendAudit.
func (al *AuditLog) VerifyAudit() (n int, err error) {
	n, _, err = al.VerifyKept()
	return n, err
}

// VerifyKept is VerifyAudit, and the seq of the last record sealed out of the store as
// of the same read (AuditArchived): the records checked are those after it.
func (al *AuditLog) VerifyKept() (n int, base uint64, err error) {
	err = al.db.view("verify audit", func(tx *bolt.Tx) error {
		var err error
		base, _ = parseHead(tx.Bucket(bucketMeta).Get(auditBaseKey))
		n, err = verifyTx(tx)
		return err
	})
	return n, base, err
}

func verifyTx(tx *bolt.Tx) (int, error) {
	b := tx.Bucket(bucketAudit)
	base, prevHash := parseHead(tx.Bucket(bucketMeta).Get(auditBaseKey))
	want := base + 1
	checked := func() int { return int(want - 1 - base) }
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if len(k) != 8 {
			return checked(), &ChainError{Seq: want, Reason: fmt.Sprintf("malformed key %q", k)}
		}
		if seq := binary.BigEndian.Uint64(k); seq != want {
			return checked(), &ChainError{Seq: want, Reason: fmt.Sprintf("record missing (next record is %d)", seq)}
		}
		hash, err := checkRecord(want, prevHash, v)
		if err != nil {
			return checked(), err
		}
		prevHash = hash
		want++
	}
	return checked(), checkHead(tx, want-1, prevHash, b.Sequence())
}

// checkRecord verifies the stored bytes v of record seq against the previous hash and
// returns its hash.
// CheckAuditRecord checks one audit record as stored (v, its canonical JSON) against the
// seq and the hash of the record before it, and returns its hash: a copy of a chain kept
// elsewhere (the fleet's hub) is checked record by record as it comes. A *ChainError says
// what is wrong.
func CheckAuditRecord(seq uint64, prevHash string, v []byte) (string, error) {
	return checkRecord(seq, prevHash, v)
}

func checkRecord(seq uint64, prevHash string, v []byte) (string, error) {
	bad := func(format string, args ...any) (string, error) {
		return "", &ChainError{Seq: seq, Reason: fmt.Sprintf(format, args...)}
	}
	var r nudge.AuditRecord
	if err := json.Unmarshal(v, &r); err != nil {
		return bad("record undecodable: %v", err)
	}
	canon, err := json.Marshal(&r)
	if err != nil {
		return bad("record unencodable: %v", err)
	}
	if !bytes.Equal(canon, v) {
		return bad("record bytes altered (not in canonical form)")
	}
	if r.Seq != seq {
		return bad("record %d found at position %d (reordered)", r.Seq, seq)
	}
	if r.PrevHash != prevHash {
		return bad("prev_hash does not match the previous record (record deleted or edited)")
	}
	hash := r.Hash
	r.Hash = ""
	body, _ := json.Marshal(&r)
	if chainHash(r.PrevHash, body) != hash {
		return bad("hash mismatch (record edited)")
	}
	return hash, nil
}

// checkHead compares the last record with the head kept in meta and the bucket's
// sequence, so deleting records at the tail is detected.
func checkHead(tx *bolt.Tx, last uint64, lastHash string, sequence uint64) error {
	headSeq, headHash := parseHead(tx.Bucket(bucketMeta).Get(auditHeadKey))
	switch {
	case headSeq > last || sequence > last:
		return &ChainError{Seq: last + 1, Reason: fmt.Sprintf("records %d..%d missing at the tail", last+1, max(headSeq, sequence))}
	case headSeq < last || sequence < last:
		return &ChainError{Seq: headSeq + 1, Reason: "records after the recorded head (appended outside the store)"}
	case headHash != lastHash:
		return &ChainError{Seq: last, Reason: "last record does not match the recorded head hash"}
	}
	return nil
}
