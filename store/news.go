package store

// What the store reports on Options.Bus: what happens behind its callers' backs. Each is
// published on a goroutine of the store's, never after Close returns.

// LaterFailed: a write-behind write failed (Op: what it was), or the consistency check
// that went on in the background found damage.
type LaterFailed struct {
	Op  string
	Err error
}

// HealthChanged: write-behind commits started failing (Err), or succeed again (nil).
// See DB.Unavailable.
type HealthChanged struct{ Err error }

// Idle: the writer has been idle for Options.IdleAfter after writing; the store's file
// pages were dropped from the resident set (ReleaseMapped).
type Idle struct{}
