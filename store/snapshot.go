package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/nudgehq/nudge"
)

// Snapshot is the last state a store file holds, read without a daemon: what `nudge
// status` and `nudge ls` show while `nudge serve` is down.
type Snapshot struct {
	Runtimes []nudge.Runtime          // ordered as ListRuntimes
	Last     map[string]nudge.Trigger // each runtime's newest trigger, by runtime id
	Written  time.Time                // when the file was last written (its mtime)
}

// snapshotScan bounds how many of the newest triggers ReadSnapshot walks to find each
// runtime's last one.
const snapshotScan = 10000

// ReadSnapshot reads the runtimes and each one's newest trigger from the store at path
// without taking it over: bbolt read-only, under a shared lock it waits for at most
// timeout (ErrLocked if a daemon holds the file), held only while it reads; no check, no
// create-log replay, nothing written. A daemon that starts meanwhile waits for those few
// milliseconds, within its own lock timeout. Triggers accepted in the create log but not
// yet committed are not seen.
func ReadSnapshot(path string, timeout time.Duration) (Snapshot, error) {
	var s Snapshot
	fi, err := os.Stat(path)
	if err != nil {
		return s, fmt.Errorf("read store: %w", err)
	}
	s.Written = fi.ModTime()
	bdb, err := openBolt(path, &bolt.Options{ReadOnly: true, Timeout: timeout})
	if errors.Is(err, bolt.ErrTimeout) {
		return s, fmt.Errorf("read store %s: %w (a daemon holds it)", path, ErrLocked)
	}
	if err != nil {
		return s, err
	}
	defer bdb.Close()
	s.Last = map[string]nudge.Trigger{}
	err = bdb.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketRuntimes); b != nil {
			if err := forEachJSON(b, func(r nudge.Runtime) { s.Runtimes = append(s.Runtimes, r) }); err != nil {
				return err
			}
		}
		b := tx.Bucket(bucketTriggers)
		if b == nil {
			return nil
		}
		n := 0
		return scan(b.Cursor(), nil, true, func(_, v []byte) (bool, error) {
			var t nudge.Trigger
			if err := json.Unmarshal(v, &t); err == nil && t.RuntimeID != "" {
				if _, ok := s.Last[t.RuntimeID]; !ok {
					s.Last[t.RuntimeID] = t
				}
			}
			n++
			return n >= snapshotScan || len(s.Last) >= len(s.Runtimes), nil
		})
	})
	sortRuntimes(s.Runtimes)
	return s, wrapTx("read store", err)
}
