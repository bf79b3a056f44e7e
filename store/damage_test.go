package store

import (
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
)

// damageFixture writes a store with enough records to span many pages and returns its
// bytes.
func damageFixture(t *testing.T) []byte {
	b, _ := damageFixtureReach(t)
	return b
}

// damageFixtureReach is damageFixture, and how far into the file its pages reach (bbolt
// grows the file ahead of them).
func damageFixtureReach(t *testing.T) ([]byte, int) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "nudge.db")
	db, err := Open(path, Options{NoSync: true, Now: newClock().Now})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 150 {
		id := fmt.Sprintf("t%03d", i)
		if _, _, err := db.Triggers().CreateTrigger(trig(id), &nudge.AuditRecord{Event: "trigger_created", TriggerID: id}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 20 {
		if err := db.Runtimes().PutRuntime(nudge.Runtime{RuntimeID: fmt.Sprintf("rt_ws.r%d", i), WorkspaceID: "ws"}); err != nil {
			t.Fatal(err)
		}
	}
	reach := int(db.Space().Pages)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b, reach
}

// openDamaged writes b as a store and opens it; a panic fails the test.
func openDamaged(t *testing.T, b []byte) (*DB, string, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "nudge.db")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	var db *DB
	var err error
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("Open panicked: %v", r)
			}
		}()
		db, err = Open(path, Options{NoSync: true, Timeout: 100e6, CheckTimeout: 5 * time.Second})
	}()
	return db, path, err
}

// A damaged nudge.db is refused with ErrDamaged naming the file — never a panic, never
// silently replaced by an empty store.
func TestOpenDamaged(t *testing.T) {
	// The fixture's pages reach `reach` bytes (256 KiB when bbolt left half of each page
	// empty; less since the append-only buckets fill theirs: appendFill).
	good, reach := damageFixtureReach(t)
	if reach < 32<<10 || reach > len(good) {
		t.Fatalf("the fixture's pages reach %d bytes of %d", reach, len(good))
	}
	cases := map[string][]byte{
		"empty":            {},
		"one page":         good[:4096],
		"three pages":      good[:3*4096],
		"cut mid page":     good[:5*4096+1234],
		"last page short":  good[:reach-4096],
		"half of its data": good[:reach/2],
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			db, path, err := openDamaged(t, b)
			if err == nil {
				db.Close()
				t.Fatalf("opened a damaged store")
			}
			if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "move the file aside") {
				t.Fatalf("error = %v; want ErrDamaged naming %s and what to do", err, path)
			}
			if fi, err := os.Stat(path); err != nil || fi.Size() != int64(len(b)) {
				t.Fatalf("damaged file changed: %v %v", fi, err)
			}
		})
	}
}

// Random byte flips: Open either refuses (ErrDamaged) or everything it opened reads
// back without an error or a panic.
func TestOpenFlippedBytes(t *testing.T) {
	good := damageFixture(t)
	refused := 0
	for seed := range int64(40) {
		rng := rand.New(rand.NewSource(seed))
		b := append([]byte(nil), good...)
		for range 1 + rng.Intn(8) {
			// Skip the two meta pages (checksummed; bbolt falls back to the other one).
			off := 2*4096 + rng.Intn(len(b)-2*4096)
			b[off] ^= byte(1 + rng.Intn(255))
		}
		db, _, err := openDamaged(t, b)
		if err != nil {
			if !errors.Is(err, ErrDamaged) {
				t.Fatalf("seed %d: error %v is not ErrDamaged", seed, err)
			}
			refused++
			continue
		}
		func() {
			defer db.Close()
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("seed %d: read panicked after a clean Open: %v", seed, r)
				}
			}()
			if _, err := db.Triggers().ListTriggers(TriggerFilter{}); err != nil {
				t.Fatalf("seed %d: opened, then ListTriggers: %v", seed, err)
			}
			if _, err := db.Runtimes().ListRuntimes(); err != nil {
				t.Fatalf("seed %d: opened, then ListRuntimes: %v", seed, err)
			}
			if _, err := db.AuditLog().Audit(AuditFilter{}); err != nil {
				t.Fatalf("seed %d: opened, then Audit: %v", seed, err)
			}
		}()
	}
	t.Logf("%d flipped stores refused at open", refused)
}
