package store

import (
	"bufio"
	"bytes"
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

// Environment of the crash helper process.
const (
	envCrashPath   = "NUDGE_STORE_CRASH_PATH"
	envCrashPrefix = "NUDGE_STORE_CRASH_PREFIX"
	envCrashNoSync = "NUDGE_STORE_CRASH_NOSYNC"
	envCrashQuick  = "NUDGE_STORE_CRASH_QUICK"
)

// TestHelperProcess is not a test: TestCrashRecovery runs the test binary again with
// envCrashPath set, and this writes to the store in a tight loop until it is killed.
// After each commit returns it prints "C id" (created) or "X id" (closed) on stdout.
func TestHelperProcess(t *testing.T) {
	path := os.Getenv(envCrashPath)
	if path == "" {
		return
	}
	db, err := Open(path, Options{Timeout: 10 * time.Second, NoSync: os.Getenv(envCrashNoSync) != ""})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	prefix := os.Getenv(envCrashPrefix)
	deadline := time.Now().Add(30 * time.Second) // never outlive a parent that died
	for i := 0; time.Now().Before(deadline); i++ {
		if err := crashStep(db, fmt.Sprintf("%s-%d", prefix, i), i); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
	}
	os.Exit(4)
}

func crashStep(db *DB, id string, i int) error {
	tr := trig(id)
	tr.Prompt = strings.Repeat("p", 100+i%500) // vary sizes so pages split and spill
	create := db.Triggers().CreateTrigger
	if os.Getenv(envCrashQuick) != "" {
		create = db.Triggers().CreateTriggerQuick // the create log: replayed by the next Open
	}
	if _, _, err := create(tr, &nudge.AuditRecord{Event: "trigger_received"}); err != nil {
		return err
	}
	fmt.Printf("C %s\n", id)
	if i%3 != 0 {
		return nil
	}
	db.Flush()
	if err := db.Triggers().AddAttempt(nudge.Attempt{TriggerID: id, Backend: "tmux"}); err != nil {
		return err
	}
	_, err := db.Triggers().UpdateTrigger(id, func(t *nudge.Trigger) error { t.Closed, t.State = true, "acked"; return nil },
		nudge.AuditRecord{Event: "ack_received"}, nudge.AuditRecord{Event: "trigger_closed"})
	if err != nil {
		return err
	}
	fmt.Printf("X %s\n", id)
	_, err = db.AuditLog().AppendAudit(nudge.AuditRecord{Event: "tick", Detail: []byte(fmt.Sprintf(`{"i":%d}`, i))})
	return err
}

// TestCrashRecovery kills a child process with SIGKILL while it writes to the store,
// then reopens the store: it must open cleanly, hold every trigger the child saw
// committed, and pass VerifyAudit. Rounds alternate between fsync and NoSync (both are
// safe against kill -9) and share one file.
func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns child processes")
	}
	path := filepath.Join(t.TempDir(), "state", "nudge.db")
	for round := range 6 {
		created, closed := crashChild(t, path, round)
		db, err := Open(path, Options{Timeout: 5 * time.Second})
		if err != nil {
			t.Fatalf("round %d: reopen after kill: %v", round, err)
		}
		checkAfterCrash(t, db, round, created, closed)
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// crashChild runs one helper process, kills it a random time after it has committed a
// few triggers, and returns the ids it reported as created and as closed.
func crashChild(t *testing.T, path string, round int) (created, closed []string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), envCrashPath+"="+path, fmt.Sprintf("%s=r%d", envCrashPrefix, round))
	if round%2 == 1 {
		cmd.Env = append(cmd.Env, envCrashNoSync+"=1")
	}
	if round%3 == 2 {
		cmd.Env = append(cmd.Env, envCrashQuick+"=1")
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1024)
	go readLines(stdout, lines)
	var got []string
	killAfter := 5 + rand.IntN(60) // lines
	timeout := time.After(20 * time.Second)
	for len(got) < killAfter {
		select {
		case l, ok := <-lines:
			if !ok {
				cmd.Wait()
				t.Fatalf("round %d: child exited early: %s", round, stderr.String())
			}
			got = append(got, l)
		case <-timeout:
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("round %d: child wrote %d lines in 20s: %s", round, len(got), stderr.String())
		}
	}
	time.Sleep(time.Duration(rand.IntN(30)) * time.Millisecond) // land anywhere in a write
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	for l := range lines { // drain until EOF: every line the child managed to print
		got = append(got, l)
	}
	cmd.Wait()
	for _, l := range got {
		switch kind, id, _ := strings.Cut(l, " "); kind {
		case "C":
			created = append(created, id)
		case "X":
			closed = append(closed, id)
		}
	}
	return created, closed
}

// readLines sends each complete line of r (a partial last line is dropped) and closes
// out at EOF.
func readLines(r io.Reader, out chan<- string) {
	defer close(out)
	br := bufio.NewReader(r)
	for {
		l, err := br.ReadString('\n')
		if err != nil {
			return
		}
		out <- strings.TrimSuffix(l, "\n")
	}
}

func checkAfterCrash(t *testing.T, db *DB, round int, created, closed []string) {
	t.Helper()
	for _, id := range created {
		if _, err := db.Triggers().GetTrigger(id); err != nil {
			t.Errorf("round %d: committed trigger %s lost: %v", round, id, err)
		}
	}
	for _, id := range closed {
		if tr, err := db.Triggers().GetTrigger(id); err != nil || !tr.Closed {
			t.Errorf("round %d: closed trigger %s: closed=%v, %v", round, id, tr.Closed, err)
		}
	}
	n, err := db.AuditLog().VerifyAudit()
	if err != nil {
		t.Fatalf("round %d: VerifyAudit after kill: %v", round, err)
	}
	if n < len(created)+2*len(closed) {
		t.Errorf("round %d: %d audit records, fewer than the %d committed", round, n, len(created)+2*len(closed))
	}
	all, err := db.Triggers().ListTriggers(TriggerFilter{})
	if err != nil {
		t.Fatal(err)
	}
	open, err := db.Triggers().ListTriggers(TriggerFilter{OpenOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	wantOpen := 0
	for _, tr := range all {
		if !tr.Closed {
			wantOpen++
		}
	}
	if len(open) != wantOpen {
		t.Errorf("round %d: open index has %d triggers, %d are not closed", round, len(open), wantOpen)
	}
	t.Logf("round %d: child committed %d triggers before SIGKILL; store has %d triggers, %d audit records",
		round, len(created), len(all), n)
}
