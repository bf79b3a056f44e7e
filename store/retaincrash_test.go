package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
)

// Environment of the retention crash helper.
const (
	envRetainPath = "NUDGE_STORE_RETAIN_PATH"
	envRetainMode = "NUDGE_STORE_RETAIN_MODE" // "retain" or "compact"
)

// TestRetainHelperProcess is not a test: the crash tests below run the test binary
// again with envRetainPath set, and this runs retention passes (or an Open that
// compacts) on that store until it is killed or done.
func TestRetainHelperProcess(t *testing.T) {
	path := os.Getenv(envRetainPath)
	if path == "" {
		return
	}
	opts := Options{Timeout: 10 * time.Second}
	if os.Getenv(envRetainMode) == "compact" {
		opts.CompactFree = 1
	}
	db, err := Open(path, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if os.Getenv(envRetainMode) == "retain" {
		r := Retention{Window: time.Hour, AuditDir: filepath.Join(filepath.Dir(path), "audit"), Batch: 2, Pause: time.Millisecond}
		if st := db.Retain(context.Background(), r); st.Err != nil {
			fmt.Fprintln(os.Stderr, st.Err)
			os.Exit(3)
		}
	}
	db.Close()
	os.Exit(0)
}

// crashStore writes n triggers a year ago on a fake clock (the even ones finished, the
// odd ones open, with audit records and attempts) and returns the path.
func crashStore(t *testing.T, n int, prompt int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "nudge.db")
	db, err := Open(path, Options{NoSync: true, Now: newClock().Now})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		tr := trig(fmt.Sprintf("t%d", i))
		tr.Prompt = strings.Repeat("p", prompt)
		if _, _, err := db.Triggers().CreateTrigger(tr, &nudge.AuditRecord{Event: "trigger_received"}); err != nil {
			t.Fatal(err)
		}
		if err := db.Triggers().AddAttempt(nudge.Attempt{TriggerID: tr.TriggerID, Backend: "tmux"}); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			if _, err := db.Triggers().UpdateTrigger(tr.TriggerID, func(tr *nudge.Trigger) error { tr.Closed = true; return nil },
				nudge.AuditRecord{Event: "trigger_closed"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// runKilled runs the helper in mode on path and kills it with SIGKILL after wait (or
// lets it finish first). It reports whether it was killed before it finished.
func runKilled(t *testing.T, path, mode string, wait time.Duration) bool {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestRetainHelperProcess$")
	cmd.Env = append(os.Environ(), envRetainPath+"="+path, envRetainMode+"="+mode)
	var stderr bytes.Buffer
	cmd.Stderr, cmd.Stdout = &stderr, io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("helper: %v: %s", err, stderr.String())
		}
		return false
	case <-time.After(wait):
		cmd.Process.Kill() //nolint:errcheck // it may have just exited
		err := <-done
		var ee *exec.ExitError
		return errors.As(err, &ee) && !ee.Exited()
	}
}

// checkKept opens path and checks that nothing kept was lost: every open trigger is
// there and open, every finished one is there or aged out (never simply gone), the kept
// audit log verifies from its base, and the archive joins it.
func checkKept(t *testing.T, path string, n int) (removed int) {
	t.Helper()
	db, err := Open(path, Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer db.Close()
	for i := range n {
		id := fmt.Sprintf("t%d", i)
		tr, err := db.Triggers().GetTrigger(id)
		var aged *AgedOutError
		switch {
		case i%2 == 1 && (err != nil || tr.Closed):
			t.Fatalf("open trigger %s: closed=%v, %v", id, tr.Closed, err)
		case errors.As(err, &aged):
			removed++
		case err != nil:
			t.Fatalf("finished trigger %s lost without a tombstone: %v", id, err)
		}
	}
	if _, err := db.AuditLog().VerifyAudit(); err != nil {
		t.Fatalf("VerifyAudit: %v", err)
	}
	seq, hash, err := db.AuditLog().AuditArchived()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := VerifyArchive(filepath.Join(filepath.Dir(path), "audit"), seq, hash); err != nil {
		t.Fatalf("VerifyArchive: %v", err)
	}
	return removed
}

// A kill -9 anywhere in a retention pass loses nothing kept: run after run on one file,
// each killed a random time in, until a run finishes.
func TestRetainCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns child processes")
	}
	const n = 300
	path := crashStore(t, n, 200)
	kills := 0
	for round := 0; round < 30; round++ {
		killed := runKilled(t, path, "retain", time.Duration(20+rand.IntN(150))*time.Millisecond)
		removed := checkKept(t, path, n)
		t.Logf("round %d: killed=%v, %d of %d finished triggers removed", round, killed, removed, n/2)
		if !killed {
			if removed != n/2 {
				t.Fatalf("a finished pass removed %d of %d", removed, n/2)
			}
			break
		}
		kills++
	}
	if kills == 0 {
		t.Log("no run was killed mid-pass (a fast machine): the check ran on finished passes only")
	}
}

// A kill -9 during Open's compaction loses nothing: the old file, or the whole new one.
func TestCompactCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns child processes")
	}
	const n = 600
	orig := crashStore(t, n, 4000)
	// Free most of it: finished triggers removed (no audit sealing here), then reopen
	// without compaction so the free pages stay.
	db, err := Open(orig, Options{NoSync: true, CompactFree: -1})
	if err != nil {
		t.Fatal(err)
	}
	if st := db.Retain(context.Background(), Retention{Window: time.Hour, Batch: 100, Pause: time.Microsecond}); st.Err != nil || st.Triggers != n/2 {
		t.Fatalf("retain: %+v", st)
	}
	db.Close()
	before := fileSize(t, orig)
	data, err := os.ReadFile(orig)
	if err != nil {
		t.Fatal(err)
	}
	for round := range 6 {
		dir := t.TempDir()
		path := filepath.Join(dir, "nudge.db")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		killed := runKilled(t, path, "compact", time.Duration(5+rand.IntN(60))*time.Millisecond)
		size := fileSize(t, path)
		checkKept(t, path, n) // the Open here compacts what a killed run did not
		t.Logf("round %d: killed=%v, file %d -> %d bytes (-> %d after the check's open)", round, killed, before, size, fileSize(t, path))
	}
	if after := fileSize(t, filepath.Join(filepath.Dir(orig), "nudge.db")); after != before {
		t.Fatalf("the original changed: %d -> %d", before, after)
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

func TestCompactShrinks(t *testing.T) {
	path := crashStore(t, 400, 4000)
	db, err := Open(path, Options{NoSync: true, CompactFree: -1})
	if err != nil {
		t.Fatal(err)
	}
	head, _, _ := db.AuditLog().AuditHead()
	if st := db.Retain(context.Background(), Retention{Window: time.Hour, Batch: 50, Pause: time.Microsecond}); st.Err != nil {
		t.Fatal(st.Err)
	}
	db.Close()
	before := fileSize(t, path)
	db, err = Open(path, Options{NoSync: true, CompactFree: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	after := fileSize(t, path)
	if after*2 > before {
		t.Errorf("compaction: %d -> %d bytes", before, after)
	}
	if _, err := os.Stat(path + ".compact"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the copy is left beside the store: %v", err)
	}
	// The handle is the new file's, and writable: sequences carried over.
	tr := trig("new")
	if _, _, err := db.Triggers().CreateTrigger(tr, &nudge.AuditRecord{Event: "trigger_received"}); err != nil {
		t.Fatal(err)
	}
	if h, _, _ := db.AuditLog().AuditHead(); h != head+1 {
		t.Errorf("audit head %d after compaction and one append, want %d", h, head+1)
	}
	if _, err := db.AuditLog().VerifyAudit(); err != nil {
		t.Fatal(err)
	}
	db.Close()
	checkKept(t, path, 400)
	t.Logf("compaction: %d -> %d bytes", before, after)
}

// A compaction that cannot write its copy (here: the copy's path is taken by a
// directory, as a full disk would fail it) is skipped: the store opens on the old file,
// whole, and the failure is reported.
func TestCompactFailsOpenAnyway(t *testing.T) {
	path := crashStore(t, 200, 4000)
	db, err := Open(path, Options{NoSync: true, CompactFree: -1})
	if err != nil {
		t.Fatal(err)
	}
	if st := db.Retain(context.Background(), Retention{Window: time.Hour, Batch: 100, Pause: time.Microsecond}); st.Err != nil {
		t.Fatal(st.Err)
	}
	db.Close()
	if err := os.MkdirAll(filepath.Join(path+".compact", "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	var reported []string
	news := newTestNews(t)
	on(news, func(f LaterFailed) { reported = append(reported, f.Op+": "+f.Err.Error()) })
	db, err = Open(path, Options{NoSync: true, CompactFree: 1, Bus: news.b})
	if err != nil {
		t.Fatalf("Open with a compaction that cannot write: %v", err)
	}
	db.Close()
	news.drain()
	if len(reported) != 1 || !strings.Contains(reported[0], "skipped") {
		t.Fatalf("reported %q", reported)
	}
	checkKept(t, path, 200)
}
