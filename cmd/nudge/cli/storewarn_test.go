package cli

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nudgehq/nudge/cmd/nudge/retention"
)

// A store file past --store-warn-size (issue 40): the daemon warns in its log once when
// it crosses the bound, not at every retention pass after it, and again only when the
// file has grown a quarter further; /metrics shows the file's size and the bound; nudge
// doctor warns with what to do.
func TestStoreWarnSize(t *testing.T) {
	const bound = 1024 // any store file is larger
	cfg := newTestConfig(t)
	cfg.StateDir = filepath.Join(cfg.StateDir, "state")
	cfg.Keep.Retain = 0 // the store keeps everything: the size is still checked every pass
	cfg.Keep.WarnSize, cfg.Keep.Every = bound, 20*time.Millisecond
	td, logs := startDaemonLog(t, cfg)

	warnings := func() (past int, sizes []int64) {
		for _, line := range strings.Split(logs.String(), "\n") {
			if !strings.Contains(line, "[WARN]") || !strings.Contains(line, "--store-warn-size") {
				continue
			}
			if strings.Contains(line, "store file is past --store-warn-size") {
				past++
			}
			sizes = append(sizes, logInt(t, line, "bytes"))
			if got := logInt(t, line, "bound"); got != bound {
				t.Fatalf("bound=%d in %q", got, line)
			}
			if !strings.Contains(line, "shorten serve --retain") || !strings.Contains(line, "--compact-free") {
				t.Fatalf("the warning does not say what to do: %q", line)
			}
		}
		return past, sizes
	}
	// Passes run (and write nothing) while the warning is not repeated.
	waitLog(t, logs, "store retention pass: nothing due", 10)
	past, sizes := warnings()
	if past != 1 {
		t.Fatalf("%d first warnings (want 1) after 10 passes:\n%s", past, logs.String())
	}
	growth(t, sizes)

	// Writes grow the file: a quarter further, it is warned about again.
	prompt := strings.Repeat("grow the store ", 4<<10/15)
	path := filepath.Join(cfg.StateDir, "nudge.db")
	last, again := sizes[len(sizes)-1], len(sizes)
	i := 0
	for ; retention.FileSize(path) < last+last/4; i++ {
		if i == 5000 {
			t.Fatalf("the file never grew a quarter past %d bytes", last)
		}
		req := map[string]any{"trigger_id": fmt.Sprintf("grow-%d", i), "workspace": "sw", "agent": "nobody",
			"thread_id": fmt.Sprintf("th-%d", i), "prompt": prompt}
		if _, err := td.trigger(req); err != nil && !isAPIError(err) {
			t.Fatal(err)
		}
	}
	waitLog(t, logs, "store file is still growing past --store-warn-size", again)
	past, sizes = warnings()
	t.Logf("%d triggers; warned at %v bytes", i, sizes)
	if past != 1 {
		t.Fatalf("%d first warnings, want 1:\n%s", past, logs.String())
	}
	growth(t, sizes)

	m := td.metrics()
	if m["nudge_store_warn_bytes"] != bound || m["nudge_store_file_bytes"] <= bound {
		t.Fatalf("/metrics: nudge_store_file_bytes %v, nudge_store_warn_bytes %v", m["nudge_store_file_bytes"], m["nudge_store_warn_bytes"])
	}

	newDoctorEnv(t)
	out, code := runDoctorCLI(t, cfg.Socket, "--state-dir", cfg.StateDir)
	if code != 0 {
		t.Fatalf("exit %d, want 0 (a warning is no failure):\n%s", code, out)
	}
	wantLines(t, out, "warn  local: store "+filepath.Join(cfg.StateDir, "nudge.db")+": ",
		"past serve --store-warn-size 1024 (1.0 KB): shorten serve --retain", "--compact-free")
}

// growth fails unless each warning after the first is of a file at least a quarter
// larger than the one before.
func growth(t *testing.T, sizes []int64) {
	t.Helper()
	for i := 1; i < len(sizes); i++ {
		if sizes[i] < sizes[i-1]+sizes[i-1]/4 {
			t.Fatalf("warned again at %d bytes after %d: %v", sizes[i], sizes[i-1], sizes)
		}
	}
}

// logInt is the value of key=N in an hclog line.
func logInt(t *testing.T, line, key string) int64 {
	t.Helper()
	m := regexp.MustCompile(`\b` + key + `=(\d+)`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("no %s= in %q", key, line)
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	return n
}

// waitLog waits until the log holds n lines containing s.
func waitLog(t *testing.T, logs *lockedBuffer, s string, n int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); strings.Count(logs.String(), s) < n; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d lines of %q in the log, want %d:\n%s", strings.Count(logs.String(), s), s, n, logs.String())
		}
	}
}
