package panes

import (
	"sync"
	"time"
)

// recoveryClock paces the automatic restarts of crashing runtimes (seed 003): each
// restart of a recovery waits twice as long as the one before (RestartDelay, then
// doubling, capped at RestartMaxDelay), and a recovery that goes on past
// RecoveryDeadline ends in failed. A recovery begins with a crash and ends when the
// runtime has run RecoveryDeadline without one. It owns its own lock; the records hold
// it, and it is called with their lock held or not: it needs neither.
type recoveryClock struct {
	mu sync.Mutex
	m  map[string]*recovery // runtime id -> its recovery
}

type recovery struct {
	since time.Time     // the first crash of this recovery
	last  time.Time     // the latest crash
	n     int           // crashes in this recovery
	wait  time.Duration // before the next restart
}

// crashed records a crash of id at now and returns how long to wait before restarting
// it, and whether the recovery is past deadline (then: no restart, failed).
func (k *recoveryClock) crashed(id string, now time.Time, base, max, deadline time.Duration) (wait time.Duration, expired bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil {
		k.m = map[string]*recovery{}
	}
	rc := k.m[id]
	if rc == nil || now.Sub(rc.last) >= deadline {
		rc = &recovery{since: now}
		k.m[id] = rc
	}
	rc.last = now
	rc.n++
	if now.Sub(rc.since) >= deadline {
		return 0, true
	}
	wait = base
	for i := 1; i < rc.n && wait < max; i++ {
		wait *= 2
	}
	rc.wait = min(wait, max)
	return rc.wait, false
}

// delay is the wait before id's next automatic restart: its recovery's, else base.
func (k *recoveryClock) delay(id string, base time.Duration) time.Duration {
	k.mu.Lock()
	defer k.mu.Unlock()
	if rc := k.m[id]; rc != nil && rc.wait > 0 {
		return rc.wait
	}
	return base
}

// forget ends id's recovery (stopped, restarted by hand, deregistered).
func (k *recoveryClock) forget(id string) {
	k.mu.Lock()
	delete(k.m, id)
	k.mu.Unlock()
}
