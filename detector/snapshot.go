package detector

import (
	"crypto/sha256"
	"encoding/hex"
	"time"
)

// Snapshot is what the Monitor knows of a pane's screen from its captures: seed 002's
// last_snapshot_hash, last_change_ts, last_polled_ts and stable_count. The Monitor
// captures a pane when its output has been quiet for the profile's ReadyQuiet (and, while
// a dialog is shown, once a second), not on a fixed poll: Stable counts those captures.
// Captured is published on the Bus after every capture the Monitor took of a pane, with
// what it knows of its screen now (the status files show it).
type Captured struct {
	RuntimeID string
	Snapshot  Snapshot
}

type Snapshot struct {
	Hash      string    // of the last capture's text: sha256, the first 16 bytes in hex
	ChangedAt time.Time // when the screen last changed: the last output before a capture unlike the one before
	PolledAt  time.Time // the last capture
	Stable    int       // captures in a row that showed the same screen, after the first
}

// snapshotOf records a capture of text at now in ps's Snapshot and returns it. lastOut is
// the pane's last output (unix nanos, 0 if none).
func (ps *paneState) snapshotOf(text string, now time.Time) Snapshot {
	sum := sha256.Sum256([]byte(text))
	h := hex.EncodeToString(sum[:16])
	ps.mu.Lock()
	defer ps.mu.Unlock()
	s := &ps.snap
	if h == s.Hash {
		s.Stable++
	} else {
		s.Hash, s.Stable, s.ChangedAt = h, 0, now
		if out := ps.lastOut.Load(); out != 0 && time.Unix(0, out).Before(now) {
			s.ChangedAt = time.Unix(0, out)
		}
	}
	s.PolledAt = now
	return *s
}
