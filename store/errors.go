package store

import (
	"errors"
	"fmt"
)

// Errors callers branch on with errors.Is. Every error a method returns wraps one of
// these, a *ChainError, or an I/O or encoding error from below.
var (
	// ErrNotFound: no record with that id or key.
	ErrNotFound = errors.New("not found")
	// ErrExists: a create-only operation found the id already taken.
	ErrExists = errors.New("already exists")
	// ErrLocked: another process (normally another nudge daemon) holds the database file.
	ErrLocked = errors.New("store is locked by another process")
	// ErrClosed: the DB was closed.
	ErrClosed = errors.New("store is closed")
	// ErrInvalid: a record or argument the store cannot accept (e.g. an empty id).
	ErrInvalid = errors.New("invalid argument")
	// ErrUnavailable: the store cannot write durably now (a full disk, an I/O error);
	// a new trigger is refused rather than accepted and lost.
	ErrUnavailable = errors.New("store cannot write")
)

// ChainError reports where the audit log's hash chain is broken: a record edited in
// place, deleted, reordered or appended behind the store's back. Seq is the sequence
// number at which verification stopped (for a deleted record, the missing number).
type ChainError struct {
	Seq    uint64
	Reason string
}

func (e *ChainError) Error() string {
	return fmt.Sprintf("audit chain broken at seq %d: %s", e.Seq, e.Reason)
}
