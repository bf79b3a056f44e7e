package store

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
)

// mappedKB is the resident size of this process's mappings of path (/proc/self/smaps).
func mappedKB(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no smaps: %v", err)
	}
	defer f.Close()
	kb, in := 0, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		fields := strings.Fields(line)
		if len(fields) >= 5 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":") {
			in = len(fields) >= 6 && fields[len(fields)-1] == path
			continue
		}
		if in && len(fields) == 3 && fields[0] == "Rss:" {
			n, _ := strconv.Atoi(fields[1])
			kb += n
		}
	}
	return kb
}

// After a burst the store's whole file was left resident in the daemon (every page a
// read touches stays mapped): 28 MB of a 33 MB store at idle. ReleaseMapped drops the
// pages, and the store does it by itself (then publishes Idle) once its writer has been
// idle; reads still see everything.
func TestIdleReleasesMappedPages(t *testing.T) {
	testReleasesMappedPages(t, nil)
}

// The release macOS and the BSDs use (the file mapped again in place), run here through
// the same interface: the pages go, and every record reads back the same.
func TestRemapReleasesMappedPages(t *testing.T) {
	testReleasesMappedPages(t, remapRelease{})
}

func testReleasesMappedPages(t *testing.T, r pageReleaser) {
	path := filepath.Join(t.TempDir(), "nudge.db")
	db, err := Open(path, Options{NoSync: true, Now: newClock().Now, IdleAfter: -1})
	if err != nil {
		t.Fatal(err)
	}
	if r != nil {
		db.releaser = r
	}
	const n = 3000
	big := strings.Repeat("x", 1500)
	for i := 0; i < n; i++ {
		tr := trig(fmt.Sprintf("t%05d", i))
		tr.Prompt = big
		if _, _, err := db.Triggers().CreateTriggerQuick(tr, nil); err != nil {
			t.Fatal(err)
		}
	}
	db.Flush()
	readAll := func() int {
		t.Helper()
		ts, err := db.Triggers().ListTriggers(TriggerFilter{})
		if err != nil || len(ts) != n {
			t.Fatalf("ListTriggers: %d, %v", len(ts), err)
		}
		kb := mappedKB(t, path)
		if kb < 2048 {
			t.Fatalf("the store's pages were not resident after reading them all: %d KB", kb)
		}
		return kb
	}
	before := readAll()
	db.ReleaseMapped()
	if after := mappedKB(t, path); after > before/4 {
		t.Fatalf("ReleaseMapped: resident mapping of the store %d KB before, %d KB after", before, after)
	}
	readAll() // every record still reads back (ListTriggers decodes them all)
	db.Close()

	// The writer has not run since Open: nothing is counting down until it does.
	idled := make(chan struct{}, 1)
	news := newTestNews(t)
	on(news, func(Idle) {
		select {
		case idled <- struct{}{}:
		default:
		}
	})
	db = openAt(t, path, Options{NoSync: true, Now: newClock().Now, IdleAfter: 50 * time.Millisecond, Bus: news.b})
	if r != nil {
		db.releaser = r
	}
	before = readAll()
	db.Triggers().UpdateTriggerLater("t00001", func(*nudge.Trigger) error { return nil })
	select {
	case <-idled:
	case <-time.After(30 * time.Second):
		t.Fatal("Idle was not published after the writer went idle")
	}
	after := mappedKB(t, path)
	t.Logf("resident mapping of the store: %d KB before, %d KB after the idle release", before, after)
	if after > before/4 {
		t.Fatal("the idle release left the store's pages resident")
	}
	if got, err := db.Triggers().GetTrigger("t01234"); err != nil || got.Prompt != big {
		t.Fatalf("GetTrigger after the release: %v", err)
	}
}
