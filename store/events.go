package store

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The event log keeps the daemon's recent /v1/events stream so that a client can resume
// from a sequence number, across reconnects and restarts. Event n is stored under key n
// (8 bytes big-endian; the caller assigns the numbers, increasing, possibly with gaps)
// as 8 bytes of its time (Unix nanoseconds, big-endian) followed by its JSON. The log's
// state (count, the highest sequence ever trimmed, the highest reserved, the highest
// recorded lost, whether a writer has it open) lives in the meta bucket under a reserved
// key, updated in the same transaction as the events.

// Events is the store's event log (see above): appends and trims through the DB's
// write-behind queue, the reservation of sequence numbers, and reads for replay. Its
// state lives in the file (the meta bucket), none in memory. Reached as part of a DB
// (its methods are the DB's); Close clears the log's open flag through it.
type Events struct{ db *DB }

// eventsStateKey holds count, trimmed, reserved, bytes, lost and flags (8 bytes BE each;
// stores written before lost and flags hold only the first four).
var eventsStateKey = []byte(reservedMeta + "events")

// eventsOpen is the flags bit set by ReserveEvents and cleared by a Close that wrote
// everything queued: set at the next Open, the last writer did not close cleanly.
const eventsOpen = 1

// Event is one entry of the event log. The store does not look inside Data.
type Event struct {
	Seq  uint64
	Time time.Time
	Data []byte // the event's JSON; a copy the caller owns
}

// EventLog describes the event log.
type EventLog struct {
	First, Last uint64 // the oldest and newest kept event's Seq (0 when empty)
	Count       uint64 // events kept
	Bytes       uint64 // their size as stored (JSON plus 8 bytes each)
	// Trimmed is the highest Seq ever removed by TrimEventsLater (0 if none): a reader
	// that has seen less than it has missed events.
	Trimmed uint64
	// Reserved is the highest Seq recorded by ReserveEvents: a writer that restarts
	// continues above it, so no number is used twice even if a crash lost the newest
	// events after readers saw them.
	Reserved uint64
	// Lost is the highest Seq recorded by LoseEventsLater (0 if none): events up to it
	// may be missing (they could not be written), so a reader that has seen less may
	// have missed some.
	Lost uint64
	// Unclean is true when the last writer (ReserveEvents) did not close the store
	// cleanly (a crash, or a Close while commits failed): events numbered above Last, up
	// to Reserved, may have been given out and never written.
	Unclean bool
}

type eventsState struct{ count, trimmed, reserved, bytes, lost, flags uint64 }

func readEventsState(meta *bolt.Bucket) eventsState {
	v := meta.Get(eventsStateKey)
	if len(v) < 32 {
		return eventsState{}
	}
	be := binary.BigEndian
	st := eventsState{count: be.Uint64(v), trimmed: be.Uint64(v[8:]), reserved: be.Uint64(v[16:]), bytes: be.Uint64(v[24:])}
	if len(v) >= 48 {
		st.lost, st.flags = be.Uint64(v[32:]), be.Uint64(v[40:])
	}
	return st
}

func (s eventsState) put(meta *bolt.Bucket) error {
	v := make([]byte, 48)
	be := binary.BigEndian
	for i, n := range []uint64{s.count, s.trimmed, s.reserved, s.bytes, s.lost, s.flags} {
		be.PutUint64(v[8*i:], n)
	}
	return meta.Put(eventsStateKey, v)
}

// Unavailable returns why the event log cannot be written now: the store's write-behind
// commits are failing (DB.Unavailable), so what AppendEventsLater queues waits.
func (el *Events) Unavailable() error { return el.db.Unavailable() }

// EventLog returns the log's state.
func (el *Events) EventLog() (EventLog, error) {
	var out EventLog
	err := el.db.view("event log", func(tx *bolt.Tx) error {
		st := readEventsState(tx.Bucket(bucketMeta))
		out.Count, out.Trimmed, out.Reserved, out.Bytes = st.count, st.trimmed, st.reserved, st.bytes
		out.Lost, out.Unclean = st.lost, st.flags&eventsOpen != 0
		c := tx.Bucket(bucketEvents).Cursor()
		if k, _ := c.First(); k != nil {
			out.First = binary.BigEndian.Uint64(k)
		}
		if k, _ := c.Last(); k != nil {
			out.Last = binary.BigEndian.Uint64(k)
		}
		return nil
	})
	return out, err
}

// ReserveEvents records that sequence numbers up to through may be in use, and that a
// writer has the log open (EventLog.Unclean until a clean Close). It commits before it
// returns (a writer reserves ahead, off its hot path). A lower value than the one
// recorded is ignored.
func (el *Events) ReserveEvents(through uint64) error {
	return el.db.update("reserve events", func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		st := readEventsState(meta)
		if through <= st.reserved && st.flags&eventsOpen != 0 {
			return nil
		}
		st.reserved = max(st.reserved, through)
		st.flags |= eventsOpen
		return st.put(meta)
	})
}

// AppendEventsLater queues evs for the write-behind writer (see PutRuntimeLater) as a
// lazy write (PutRuntimeLazy): it returns at once, and the events commit in the order
// they were queued, together with the other writes queued around them, at the latest
// about a second later. Seq must increase across calls; an event whose Seq
// is not above the newest stored one is dropped (reported as LaterFailed).
// after, if not nil, is told once what became of evs: nil once they are committed, the
// error if they were dropped; never if a Close dropped them while commits failed (the
// log is then Unclean at the next Open) or they came after Close. It runs on the
// writer's goroutine: it must not wait for the store (Flush).
func (el *Events) AppendEventsLater(after func(err error), evs ...Event) {
	if len(evs) == 0 {
		return
	}
	el.db.enqueue(laterOp{name: "append events", after: after, lazy: true, fn: func(tx *bolt.Tx) error {
		return appendEventsTx(tx, evs)
	}})
}

// LoseEventsLater queues a record that events up to through may be missing from the log
// (the writer could not write them): EventLog.Lost. It runs in order with the queued
// appends. A lower value than the one recorded is ignored.
func (el *Events) LoseEventsLater(through uint64) {
	el.db.enqueue(laterOp{name: "record lost events", fn: func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		st := readEventsState(meta)
		if through <= st.lost {
			return nil
		}
		st.lost = through
		return st.put(meta)
	}})
}

// closeEvents clears the log's open flag once Close has written everything queued, so
// that the next Open sees a clean log (EventLog.Unclean false).
func (el *Events) closeEvents() error {
	open := false
	if err := el.db.view("close events", func(tx *bolt.Tx) error {
		open = readEventsState(tx.Bucket(bucketMeta)).flags&eventsOpen != 0
		return nil
	}); err != nil || !open {
		return err
	}
	return el.db.update("close events", func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		st := readEventsState(meta)
		st.flags &^= eventsOpen
		return st.put(meta)
	})
}

// AppendEvents appends evs and returns once they are committed.
func (el *Events) AppendEvents(evs ...Event) error {
	el.db.Flush()
	return el.db.update("append events", func(tx *bolt.Tx) error { return appendEventsTx(tx, evs) })
}

func appendEventsTx(tx *bolt.Tx, evs []Event) error {
	b, meta := tx.Bucket(bucketEvents), tx.Bucket(bucketMeta)
	b.FillPercent = appendFill
	st := readEventsState(meta)
	var last uint64
	if k, _ := b.Cursor().Last(); k != nil {
		last = binary.BigEndian.Uint64(k)
	}
	for _, ev := range evs {
		if ev.Seq <= last {
			return fmt.Errorf("append event %d: not above the newest (%d): %w", ev.Seq, last, ErrInvalid)
		}
		val := make([]byte, 8, 8+len(ev.Data))
		binary.BigEndian.PutUint64(val, uint64(ev.Time.UnixNano()))
		val = append(val, ev.Data...)
		if err := b.Put(u64(ev.Seq), val); err != nil {
			return err
		}
		last = ev.Seq
		st.count++
		st.bytes += uint64(len(val))
	}
	return st.put(meta)
}

// EventsSince returns the kept events with Seq > after, oldest first, at most limit of
// them (0: no limit), and the log's Trimmed as of the same read: if after < trimmed, the
// reader has missed events.
func (el *Events) EventsSince(after uint64, limit int) (evs []Event, trimmed uint64, err error) {
	var out []Event
	err = el.db.view("events since", func(tx *bolt.Tx) error {
		trimmed = readEventsState(tx.Bucket(bucketMeta)).trimmed
		return scan(tx.Bucket(bucketEvents).Cursor(), u64(after+1), false, func(k, v []byte) (bool, error) {
			if len(v) < 8 {
				return false, fmt.Errorf("event %x: short value", k)
			}
			out = append(out, Event{
				Seq:  binary.BigEndian.Uint64(k),
				Time: time.Unix(0, int64(binary.BigEndian.Uint64(v))).UTC(),
				Data: bytes.Clone(v[8:]),
			})
			return limit > 0 && len(out) >= limit, nil
		})
	})
	return out, trimmed, err
}

// EventWindow is what the event log keeps. Zero fields do not limit.
type EventWindow struct {
	Keep     int       // the newest Keep events
	MaxBytes int64     // whose stored size (JSON plus 8 bytes each) is at most MaxBytes
	Before   time.Time // none older than Before
}

// TrimEventsLater queues the removal of the oldest events outside w. It runs in order
// with the queued appends.
func (el *Events) TrimEventsLater(w EventWindow) {
	el.db.enqueue(laterOp{name: "trim events", fn: func(tx *bolt.Tx) error {
		return trimEventsTx(tx, w)
	}})
}

func trimEventsTx(tx *bolt.Tx, w EventWindow) error {
	b, meta := tx.Bucket(bucketEvents), tx.Bucket(bucketMeta)
	st := readEventsState(meta)
	cut := w.Before.UnixNano()
	over := func(st eventsState) bool {
		return (w.Keep > 0 && st.count > uint64(w.Keep)) || (w.MaxBytes > 0 && st.bytes > uint64(w.MaxBytes))
	}
	// Collect first, then delete: a cursor that deletes as it walks skips keys.
	var doomed [][]byte
	left := st
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		old := !w.Before.IsZero() && len(v) >= 8 && int64(binary.BigEndian.Uint64(v)) < cut
		if !old && !over(left) {
			break
		}
		doomed = append(doomed, bytes.Clone(k))
		left.count -= min(left.count, 1)
		left.bytes -= min(left.bytes, uint64(len(v)))
	}
	if len(doomed) == 0 {
		return nil
	}
	for _, k := range doomed {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	left.trimmed = max(st.trimmed, binary.BigEndian.Uint64(doomed[len(doomed)-1]))
	return left.put(meta)
}
