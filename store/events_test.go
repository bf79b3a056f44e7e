package store

import (
	"errors"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func ev(seq uint64, at time.Time) Event {
	return Event{Seq: seq, Time: at, Data: []byte(fmt.Sprintf(`{"seq":%d}`, seq))}
}

func seqs(evs []Event) []uint64 {
	out := make([]uint64, len(evs))
	for i, e := range evs {
		out[i] = e.Seq
	}
	return out
}

// Appended events come back in order, from any point, and survive a reopen.
func TestEventsAppendSinceReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nudge.db")
	db, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	db.Events().AppendEventsLater(nil, ev(1, t0), ev(2, t0))
	db.Events().AppendEventsLater(nil, ev(5, t0)) // a gap is fine
	if err := db.Events().ReserveEvents(100); err != nil {
		t.Fatal(err)
	}
	db.Close()

	db = openAt(t, path, Options{NoSync: true})
	got, _, err := db.Events().EventsSince(1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(seqs(got)) != "[2 5]" || string(got[1].Data) != `{"seq":5}` || !got[1].Time.Equal(t0) {
		t.Fatalf("EventsSince(1) = %+v", got)
	}
	if got, _, _ := db.Events().EventsSince(0, 1); fmt.Sprint(seqs(got)) != "[1]" {
		t.Fatalf("limit 1: %v", seqs(got))
	}
	log, err := db.Events().EventLog()
	if err != nil {
		t.Fatal(err)
	}
	if log != (EventLog{First: 1, Last: 5, Count: 3, Bytes: 3 * 17, Reserved: 100}) {
		t.Fatalf("EventLog = %+v", log)
	}
	// Out of order is refused (reported), the rest of the log is intact.
	if err := db.Events().AppendEvents(ev(4, t0)); err == nil {
		t.Fatal("append below the newest: no error")
	}
}

// Trim keeps the newest N and drops those older than the cut, and remembers the highest
// sequence it removed.
func TestEventsTrim(t *testing.T) {
	db := open(t)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := uint64(1); i <= 10; i++ {
		db.Events().AppendEventsLater(nil, ev(i, t0.Add(time.Duration(i)*time.Minute)))
	}
	db.Events().TrimEventsLater(EventWindow{Keep: 7})
	db.Flush()
	log, _ := db.Events().EventLog()
	if log.First != 4 || log.Count != 7 || log.Trimmed != 3 {
		t.Fatalf("after keep 7: %+v", log)
	}
	db.Events().TrimEventsLater(EventWindow{Keep: 100, Before: t0.Add(6 * time.Minute)}) // events 4 and 5 are older
	db.Flush()
	log, _ = db.Events().EventLog()
	if log.First != 6 || log.Count != 5 || log.Trimmed != 5 {
		t.Fatalf("after age cut: %+v", log)
	}
	db.Events().TrimEventsLater(EventWindow{Before: t0.Add(time.Hour)})
	db.Flush()
	log, _ = db.Events().EventLog()
	if log.Count != 0 || log.Trimmed != 10 || log.Last != 0 || log.Bytes != 0 {
		t.Fatalf("after trimming all: %+v", log)
	}
}

// A byte budget keeps the newest events that fit in it.
func TestEventsTrimBytes(t *testing.T) {
	db := open(t)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := uint64(1); i <= 10; i++ { // {"seq":N} is 9 bytes (10 for 10), +8 each
		db.Events().AppendEventsLater(nil, ev(i, t0))
	}
	db.Flush()
	log, _ := db.Events().EventLog()
	if log.Bytes != 9*17+18 {
		t.Fatalf("bytes of 10 events: %+v", log)
	}
	db.Events().TrimEventsLater(EventWindow{MaxBytes: 2*17 + 18 + 16}) // room for 3 and a bit
	db.Flush()
	log, _ = db.Events().EventLog()
	if log.First != 8 || log.Count != 3 || log.Bytes != 2*17+18 || log.Trimmed != 7 {
		t.Fatalf("after a 68-byte budget: %+v", log)
	}
}

// AppendEventsLater tells its caller what became of the events; the log is Unclean from a
// reservation until a Close that wrote everything, and Lost survives a reopen. A Close
// while commits fail leaves the log Unclean: the next writer knows events may be gone.
func TestEventsWrittenLostUnclean(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nudge.db")
	db, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := db.Events().ReserveEvents(100); err != nil {
		t.Fatal(err)
	}
	first, second := make(chan error, 1), make(chan error, 1)
	db.Events().AppendEventsLater(func(err error) { first <- err }, ev(1, t0), ev(2, t0))
	db.Events().AppendEventsLater(func(err error) { second <- err }, ev(2, t0)) // not above the newest
	if err := <-first; err != nil {
		t.Fatalf("first append: %v", err)
	}
	if err := <-second; !errors.Is(err, ErrInvalid) {
		t.Fatalf("second append: %v, want ErrInvalid", err)
	}
	db.Events().LoseEventsLater(50)
	db.Events().LoseEventsLater(40) // lower: ignored
	db.Flush()
	if st, err := db.Events().EventLog(); err != nil || !st.Unclean || st.Lost != 50 || st.Reserved != 100 {
		t.Fatalf("open log: %+v %v", st, err)
	}
	db.Close()

	db, err = Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := db.Events().EventLog(); err != nil || st.Unclean || st.Lost != 50 || st.Last != 2 {
		t.Fatalf("after a clean close: %+v %v", st, err)
	}
	if err := db.Events().ReserveEvents(100); err != nil { // no higher, but the log is open again
		t.Fatal(err)
	}
	db.failCommit = func() error { return fmt.Errorf("write: %w", syscall.ENOSPC) }
	db.Events().AppendEventsLater(func(err error) { t.Errorf("told %v about events a failing Close dropped", err) }, ev(3, t0))
	waitUntil(t, "unavailable", func() bool { return db.Unavailable() != nil })
	db.Close()

	db, err = Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if st, err := db.Events().EventLog(); err != nil || !st.Unclean || st.Last != 2 {
		t.Fatalf("after a Close while commits failed: %+v %v", st, err)
	}
}
