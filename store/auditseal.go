package store

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/nudgehq/nudge"
	bolt "go.etcd.io/bbolt"
)

// Sealed audit segments. A retention pass moves the audit records older than
// Retention.AuditWindow out of the store, oldest first, into segment files in
// Retention.AuditDir: audit-<first seq>-<last seq>.jsonl, one record per line as the
// store held it (its canonical JSON), at most sealSegment records or about sealBytes
// each. The records stay
// chained: the first record of a segment has the PrevHash of the last one before it, and
// the store keeps, under a reserved meta key, the seq and hash of the last record it
// sealed (the base). VerifyAudit starts from the base: the first kept record must be
// base+1 and chain to the base's hash. VerifyArchive checks the segments and that they
// end at the base, so an operator who keeps them can still verify the whole history.
//
// Crash safety: a segment is written to a temporary file, fsynced, renamed into place
// and the directory fsynced before any record leaves the store; the records then leave
// in transactions of sealDelete, each moving the base with them. A crash in between
// leaves records both in a segment and in the store; the next pass writes them again
// into a segment that starts at base+1 (overlapping the first), and VerifyArchive
// accepts an overlap whose records are identical.

// sealBytes bounds a segment's size (a pass holds one segment in memory); a variable so
// that a test can make segments small.
var sealBytes = 4 << 20

// auditBaseKey holds the last sealed seq (8 bytes BE) followed by its hash.
var auditBaseKey = []byte(reservedMeta + "audit_base")

const (
	sealSegment  = 20000 // records per segment at most
	sealDelete   = 1000  // records removed per transaction
	maxSealLine  = 1 << 20
	segmentGlob  = "audit-*.jsonl"
	segmentMode  = 0o600
	segmentDirRW = 0o700
)

// AuditArchived returns the seq and hash of the last record sealed out of the store (0
// and "" if none): the log kept in the store starts at seq+1.
func (al *AuditLog) AuditArchived() (seq uint64, hash string, err error) {
	err = al.db.view("audit base", func(tx *bolt.Tx) error {
		seq, hash = parseHead(tx.Bucket(bucketMeta).Get(auditBaseKey))
		return nil
	})
	return seq, hash, err
}

// VerifyAuditArchive runs VerifyArchive on the segments in the store's
// Retention.AuditDir against its base. With no AuditDir it checks nothing (0, nil).
func (al *AuditLog) VerifyAuditArchive() (int, error) {
	dir := al.db.retain.AuditDir
	if dir == "" {
		return 0, nil
	}
	seq, hash, err := al.AuditArchived()
	if err != nil {
		return 0, err
	}
	return VerifyArchive(dir, seq, hash)
}

type sealedRec struct {
	seq  uint64
	hash string
	raw  []byte
}

// seal moves the records older than cut into segments (see above).
func (al *AuditLog) seal(ctx context.Context, r Retention, cut time.Time, st *RetainStats) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		recs, full, err := al.sealable(cut, sealSegment, sealBytes)
		if err != nil || len(recs) == 0 {
			return err
		}
		if err := writeSegment(r.AuditDir, recs); err != nil {
			return err
		}
		st.Segments++
		for i := 0; i < len(recs); i += sealDelete {
			part := recs[i:min(i+sealDelete, len(recs))]
			if err := al.dropSealed(part); err != nil {
				return err
			}
			st.AuditSealed += len(part)
			st.AuditThrough = part[len(part)-1].seq
			st.Transactions++
			if err := rest(ctx, r); err != nil {
				return err
			}
		}
		if !full {
			return nil
		}
	}
}

// sealable returns the records from base+1 on that are older than cut, stopping at the
// first that is not, or once it has limit records or maxBytes of them (full).
func (al *AuditLog) sealable(cut time.Time, limit, maxBytes int) (out []sealedRec, full bool, err error) {
	err = al.db.view("seal audit", func(tx *bolt.Tx) error {
		base, _ := parseHead(tx.Bucket(bucketMeta).Get(auditBaseKey))
		c := tx.Bucket(bucketAudit).Cursor()
		size := 0
		for k, v := c.Seek(u64(base + 1)); k != nil; k, v = c.Next() {
			if full = len(out) >= limit || size >= maxBytes; full {
				break
			}
			var rec nudge.AuditRecord
			if err := json.Unmarshal(v, &rec); err != nil {
				return fmt.Errorf("decode audit record %x: %w", k, err)
			}
			if !rec.Time.Before(cut) {
				break
			}
			out = append(out, sealedRec{seq: binary.BigEndian.Uint64(k), hash: rec.Hash, raw: bytes.Clone(v)})
			size += len(v)
		}
		return nil
	})
	return out, full, err
}

// dropSealed removes recs (written to a segment already) and moves the base to the last.
func (al *AuditLog) dropSealed(recs []sealedRec) error {
	return al.db.update("seal audit", func(tx *bolt.Tx) error {
		b, meta := tx.Bucket(bucketAudit), tx.Bucket(bucketMeta)
		base, _ := parseHead(meta.Get(auditBaseKey))
		if recs[0].seq != base+1 {
			return fmt.Errorf("sealed records start at %d, the store's at %d", recs[0].seq, base+1)
		}
		for _, r := range recs {
			if err := b.Delete(u64(r.seq)); err != nil {
				return err
			}
		}
		last := recs[len(recs)-1]
		return meta.Put(auditBaseKey, append(u64(last.seq), last.hash...))
	})
}

func segmentName(first, last uint64) string {
	return fmt.Sprintf("audit-%020d-%020d.jsonl", first, last)
}

// writeSegment writes recs to their segment file, durably, before it returns.
func writeSegment(dir string, recs []sealedRec) error {
	if err := os.MkdirAll(dir, segmentDirRW); err != nil {
		return fmt.Errorf("seal audit: %w", err)
	}
	final := filepath.Join(dir, segmentName(recs[0].seq, recs[len(recs)-1].seq))
	tmp, err := os.CreateTemp(dir, ".audit-*.tmp")
	if err != nil {
		return fmt.Errorf("seal audit: %w", err)
	}
	defer os.Remove(tmp.Name()) // after the rename, a no-op
	w := bufio.NewWriterSize(tmp, 64<<10)
	for _, r := range recs {
		w.Write(r.raw)    //nolint:errcheck // Flush reports it
		w.WriteByte('\n') //nolint:errcheck // Flush reports it
	}
	err = errors.Join(w.Flush(), tmp.Chmod(segmentMode), tmp.Sync(), tmp.Close())
	if err == nil {
		err = os.Rename(tmp.Name(), final)
	}
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		return fmt.Errorf("seal audit: write %s: %w", filepath.Base(final), err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// VerifyArchive checks the sealed segments in dir: each record's chain from the first
// segment's first record on, segments in order (an overlap must repeat the same records;
// a gap fails), and that they reach the store's base (or past it: sealed meanwhile) with
// the base's hash, so the archive joins the log the store keeps. It returns the records
// checked. The files are read as untrusted: regular files only (no symlink followed),
// lines of at most 1 MiB.
func VerifyArchive(dir string, baseSeq uint64, baseHash string) (n int, err error) {
	names, err := filepath.Glob(filepath.Join(dir, segmentGlob))
	if err != nil {
		return 0, err
	}
	sort.Strings(names) // zero-padded first seq: name order is seq order
	v := archiveVerifier{base: baseSeq}
	for _, name := range names {
		if err := v.file(name); err != nil {
			return v.n, err
		}
	}
	switch {
	case baseSeq == 0:
		return v.n, nil
	case v.last < baseSeq:
		return v.n, &ChainError{Seq: v.last + 1, Reason: fmt.Sprintf("archive ends at %d, before the store's first kept record %d", v.last, baseSeq+1)}
	case v.baseHash != baseHash:
		return v.n, &ChainError{Seq: baseSeq, Reason: "archived record does not match the store's base hash"}
	}
	return v.n, nil
}

type archiveVerifier struct {
	n        int
	last     uint64
	lastHash string
	hashes   map[uint64]string // the hashes of the last segment's records (for an overlap)
	base     uint64            // the store's base seq: its hash is kept in baseHash
	baseHash string
}

func (v *archiveVerifier) file(name string) error {
	fi, err := os.Lstat(name)
	if err != nil {
		return err
	}
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	if ofi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() || !os.SameFile(fi, ofi) {
		return fmt.Errorf("verify archive: %s is not a regular file", filepath.Base(name))
	}
	br := bufio.NewReaderSize(f, 64<<10)
	hashes := map[uint64]string{}
	for {
		line, err := readLine(br)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("verify archive: %s: %w", filepath.Base(name), err)
		}
		if err := v.record(line, hashes); err != nil {
			return fmt.Errorf("verify archive: %s: %w", filepath.Base(name), err)
		}
	}
	v.hashes = hashes
	return nil
}

// record checks one archived record against the chain so far.
func (v *archiveVerifier) record(line []byte, hashes map[uint64]string) error {
	var r struct {
		Seq      uint64 `json:"seq"`
		Hash     string `json:"hash"`
		PrevHash string `json:"prev_hash"`
	}
	if err := json.Unmarshal(line, &r); err != nil {
		return &ChainError{Seq: v.last + 1, Reason: fmt.Sprintf("record undecodable: %v", err)}
	}
	if r.Seq <= v.last && v.n > 0 { // an overlap left by a crash: the same record again
		// Its bytes must hash to the hash already verified for that seq: the same record.
		if h, ok := v.hashes[r.Seq]; !ok || h != r.Hash {
			return &ChainError{Seq: r.Seq, Reason: "overlapping segments disagree"}
		}
		if _, err := checkRecord(r.Seq, r.PrevHash, line); err != nil {
			return err
		}
		hashes[r.Seq] = r.Hash
		return nil
	}
	want, prev := v.last+1, v.lastHash
	if v.n == 0 {
		// The first record kept: the segments before it may have been deleted by the
		// operator, so the chain starts where it starts.
		want, prev = r.Seq, r.PrevHash
	}
	hash, err := checkRecord(want, prev, line)
	if err != nil {
		return err
	}
	v.n++
	v.last, v.lastHash, hashes[r.Seq] = want, hash, hash
	if want == v.base {
		v.baseHash = hash
	}
	return nil
}

func readLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		var buf []byte
		buf = append(buf, line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			if len(buf) > maxSealLine {
				return nil, fmt.Errorf("line longer than %d bytes", maxSealLine)
			}
			line, err = br.ReadSlice('\n')
			buf = append(buf, line...)
		}
		line = buf
	}
	if err != nil && !(errors.Is(err, io.EOF) && len(line) > 0) {
		return nil, err
	}
	return bytes.TrimSuffix(line, []byte("\n")), nil
}
