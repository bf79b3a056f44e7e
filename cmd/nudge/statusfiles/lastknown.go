package statusfiles

import (
	"os"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/store"
)

// LastKnown reads the state a daemon that does not answer left behind in stateDir: its
// status files first (files true), written within a second of every change and read
// without any lock, also while a daemon that does not answer holds the store; without
// them, or when the store (at storePath) was written well after them (a daemon run with
// --status-files=false since), the store, if no daemon holds it. ok false: neither could
// be read.
func LastKnown(stateDir, storePath string) (snap store.Snapshot, files, ok bool) {
	f, ferr := ReadFleet(stateDir)
	if ferr == nil {
		if fi, err := os.Stat(storePath); err != nil || !fi.ModTime().After(f.WrittenAt.Add(2*time.Second)) {
			return fromFiles(f), true, true
		}
	}
	snap, serr := store.ReadSnapshot(storePath, 200*time.Millisecond)
	if serr != nil && ferr == nil {
		return fromFiles(f), true, true
	}
	return snap, false, serr == nil
}

// fromFiles is the state the fleet's status file shows.
func fromFiles(f Fleet) store.Snapshot {
	s := store.Snapshot{Written: f.WrittenAt, Last: map[string]nudge.Trigger{}}
	for _, r := range f.Runtimes {
		rt, t := r.Record()
		s.Runtimes = append(s.Runtimes, rt)
		if t != nil {
			s.Last[rt.RuntimeID] = *t
		}
	}
	return s
}
