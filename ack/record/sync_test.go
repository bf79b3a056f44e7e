package record

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// memTable is a Table format whose rows live in memory: writing one makes no file
// event, as a database commit whose event came before it was visible.
type memTable struct {
	root  string
	found bool
	mu    *sync.Mutex
	rows  *[]string
}

func (m memTable) Name() string     { return "mem" }
func (m memTable) Root(Spec) string { return m.root }
func (m memTable) Locate(Spec) (string, error) {
	if !m.found {
		return "", ErrNotYet
	}
	return filepath.Join(m.root, "db") + "#k", nil
}
func (m memTable) Parse(dst []Event, st *State, line []byte) ([]Event, error) {
	return append(dst, Event{Kind: UserMessage, Text: string(line)}), nil
}
func (m memTable) OpenTable(Spec, string, string) (TableReader, error) { return m, nil }
func (m memTable) Close() error                                        { return nil }
func (m memTable) Rows(after int64, fn func(int64, string, []byte) error) error {
	m.mu.Lock()
	rows := append([]string(nil), (*m.rows)...)
	m.mu.Unlock()
	for i := after; i < int64(len(rows)); i++ {
		if err := fn(i+1, "k", []byte(rows[i])); err != nil {
			return err
		}
	}
	return nil
}

func (m memTable) write(row string) {
	m.mu.Lock()
	*m.rows = append(*m.rows, row)
	m.mu.Unlock()
}

func newMemTable(t *testing.T, found bool) memTable {
	t.Helper()
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "db"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return memTable{root: root, found: found, mu: &sync.Mutex{}, rows: new([]string)}
}

// TestFollowSyncReadsUnseenRows: a Sync reads the record to its end without a file
// event, and answers after that read's events: rows written before the Sync come before
// its Synced; a later request's answer covers the earlier ones.
func TestFollowSyncReadsUnseenRows(t *testing.T) {
	m := newMemTable(t, true)
	m.write("one")
	r := Open(m, Spec{Dir: "/w", Spawned: time.Now()}, Options{})
	defer r.Close()
	if e := next(t, r); e.Kind != UserMessage || e.Text != "one" {
		t.Fatalf("first event %+v", e)
	}
	s, ok := r.(Syncer)
	if !ok {
		t.Fatal("the follower is no Syncer")
	}
	for i, rows := range [][]string{{"two"}, {"three", "four"}, nil} {
		for _, row := range rows {
			m.write(row)
		}
		n := uint64(i + 1)
		s.Sync(n)
		for _, row := range rows {
			if e := next(t, r); e.Kind != UserMessage || e.Text != row {
				t.Fatalf("sync %d: event %+v, want the row %q", n, e, row)
			}
		}
		if e := next(t, r); e.Kind != Synced || e.Seq != n {
			t.Fatalf("sync %d: event %+v, want Synced %d", n, e, n)
		}
	}
}

// TestFollowSyncBeforeFound: a reader that has not found its record answers at once.
func TestFollowSyncBeforeFound(t *testing.T) {
	m := newMemTable(t, false)
	r := Open(m, Spec{Dir: "/w", Spawned: time.Now()}, Options{})
	defer r.Close()
	r.(Syncer).Sync(7)
	if e := next(t, r); e.Kind != Synced || e.Seq != 7 || e.File != "" {
		t.Fatalf("event %+v, want Synced 7 with no file", e)
	}
}
