package wake

import (
	"sync"
	"time"
)

// Clock is the time a Waker reads and waits on. Tests drive a ManualClock, so a policy
// of fifteen quiet minutes is checked without sleeping for them.
type Clock interface {
	Now() time.Time
	// After is a channel that gets the time once d has passed.
	After(d time.Duration) <-chan time.Time
}

// RealClock is the wall clock.
type RealClock struct{}

func (RealClock) Now() time.Time                         { return time.Now() }
func (RealClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// ManualClock is a Clock that moves only when Set or Add moves it; a channel from After
// fires once the clock reaches its deadline. The zero value starts at the zero time.
type ManualClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []waiter
}

type waiter struct {
	at time.Time
	ch chan time.Time
}

// NewManualClock returns a ManualClock at t.
func NewManualClock(t time.Time) *ManualClock { return &ManualClock{now: t} }

func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *ManualClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.waiters = append(c.waiters, waiter{c.now.Add(d), ch})
	return ch
}

// Add moves the clock on by d.
func (c *ManualClock) Add(d time.Duration) { c.Set(c.Now().Add(d)) }

// Set moves the clock to t (never back) and fires the waiters that are due.
func (c *ManualClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.After(c.now) {
		c.now = t
	}
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if w.at.After(c.now) {
			kept = append(kept, w)
			continue
		}
		w.ch <- c.now
	}
	c.waiters = kept
}
