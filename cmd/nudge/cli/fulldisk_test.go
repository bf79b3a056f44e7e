package cli

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nudgehq/nudge/cmd/nudge/api"

	"github.com/nudgehq/nudge"
)

// smallTmpfs mounts a tmpfs of size bytes on a new directory, unmounted when the test
// ends. It skips the test where that is not allowed (not root, no mount).
func smallTmpfs(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs (a full disk)")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size+",mode=0700", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// On a full disk no trigger answered 2xx is lost: a commit that fails keeps its
// records (in the queue and the create log), the daemon refuses new triggers with
// UNAVAILABLE while it cannot write, says so in its log and metrics, and recovers when
// space returns; every accepted trigger has its receipt and audit record, also after a
// restart, and the audit chain verifies.
func TestFullDiskLosesNoAcceptedTrigger(t *testing.T) {
	cfg := newTestConfig(t)
	cfg.StateDir = smallTmpfs(t, "400k")
	cfg.Inject.AckTimeout = time.Hour // the cat pane never acks: keep the fallbacks out of it
	td := startDaemon(t, cfg)
	_, typed := rawCat(t, td, "w1", "rev")

	prompt := func(i int) string {
		return fmt.Sprintf("prompt %d ", i) + strings.Repeat(string(rune('a'+i%26)), 30<<10)
	}
	var accepted, refusedIDs []string
	refused := 0
	for i := 0; i < 60 && refused < 3; i++ {
		id := fmt.Sprintf("fd-%02d", i)
		_, err := td.trigger(map[string]any{"trigger_id": id, "thread_id": id, "workspace": "w1", "agent": "rev", "prompt": prompt(i)})
		var ae *api.Error
		switch {
		case err == nil:
			accepted = append(accepted, id)
		case errors.As(err, &ae) && ae.ErrorCode == "UNAVAILABLE":
			refused++
			refusedIDs = append(refusedIDs, id)
			if !strings.Contains(ae.Message, "no space left") {
				t.Errorf("UNAVAILABLE without the reason: %s", ae.Message)
			}
		default:
			t.Fatalf("trigger %s: %v (want 202, or UNAVAILABLE while the disk is full)", id, err)
		}
		time.Sleep(20 * time.Millisecond) // let the write-behind commit run between requests
	}
	if refused == 0 {
		t.Errorf("the disk filled up but every trigger was accepted (%d): none refused with UNAVAILABLE", len(accepted))
	}
	// A refused trigger was never typed: its caller sends it again once space returns,
	// and it would then be given twice.
	time.Sleep(500 * time.Millisecond)
	b, _ := os.ReadFile(typed)
	for _, id := range refusedIDs {
		if strings.Contains(string(b), "id="+id+" ") {
			t.Errorf("trigger %s was refused (UNAVAILABLE) but typed", id)
		}
	}
	t.Logf("%d accepted, then refused; commit errors %v", len(accepted), td.metrics()["nudge_store_commit_errors_total"])
	// Every accepted trigger has its receipt while the disk is full.
	for _, id := range accepted {
		var i int
		fmt.Sscanf(id, "fd-%d", &i)
		if _, err := td.trigger(map[string]any{"trigger_id": id, "thread_id": id, "workspace": "w1", "agent": "rev", "prompt": prompt(i)}); err != nil {
			t.Errorf("accepted trigger %s: repeat: %v", id, err)
		}
		var tr nudge.Trigger
		if err := td.c.do(bg(), "GET", "/v1/triggers/"+id, nil, &tr); err != nil {
			t.Errorf("accepted trigger %s: receipt while the disk is full: %v", id, err)
		}
	}

	// Space returns: the daemon commits what it kept and accepts triggers again.
	if out, err := exec.Command("mount", "-o", "remount,size=8m", cfg.StateDir).CombinedOutput(); err != nil {
		t.Fatalf("remount: %v: %s", err, out)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := td.trigger(map[string]any{"trigger_id": "fd-after", "thread_id": "after", "workspace": "w1", "agent": "rev", "prompt": "after"})
		if err == nil {
			accepted = append(accepted, "fd-after")
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still refusing after space returned: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// (Which write meets the full disk first, a bbolt commit or the create log, depends
	// on how the file grew; the store's TestCommitFailureKeepsCreates forces the commit.)
	if m := td.metrics(); m["nudge_store_unavailable"] != 0 {
		t.Errorf("metrics after recovery: unavailable %v, commit errors %v", m["nudge_store_unavailable"], m["nudge_store_commit_errors_total"])
	}
	// The event stream went on through it: a replay from the start is complete (the
	// events the store could not write were held and written once it could).
	deadline = time.Now().Add(30 * time.Second)
	for m := td.metrics(); m["nudge_events_unwritten"] != 0; m = td.metrics() {
		if time.Now().After(deadline) {
			t.Fatalf("events still unwritten after recovery: %v", m["nudge_events_unwritten"])
		}
		time.Sleep(50 * time.Millisecond)
	}
	if m := td.metrics(); m["nudge_events_lost_total"] != 0 {
		t.Errorf("events lost: %v", m["nudge_events_lost_total"])
	}
	ec := api.NewClient(cfg.Socket, "")
	defer ec.Close()
	evs := readEvents(t, ec, 1)
	last := uint64(1)
	for _, ev := range evs {
		if ev.Seq != last+1 {
			t.Fatalf("replay since 1 across the full disk jumps from %d to %d", last, ev.Seq)
		}
		last = ev.Seq
	}

	td.stop()
	td = startDaemon(t, cfg)
	if after := readEvents(t, ec, 1); len(after) < len(evs) || after[len(evs)-1].Seq != last {
		t.Errorf("after a restart the replay since 1 lost events of before it (%d then %d)", len(evs), len(after))
	}
	var recs []nudge.AuditRecord
	if err := td.c.do(bg(), "GET", "/v1/audit?event=trigger_received", nil, &recs); err != nil {
		t.Fatal(err)
	}
	audited := map[string]bool{}
	for _, r := range recs {
		audited[r.TriggerID] = true
	}
	for _, id := range accepted {
		var tr nudge.Trigger
		if err := td.c.do(bg(), "GET", "/v1/triggers/"+id, nil, &tr); err != nil {
			t.Errorf("accepted trigger %s: receipt after a restart: %v", id, err)
		}
		if !audited[id] {
			t.Errorf("accepted trigger %s: no trigger_received audit record", id)
		}
	}
	var v map[string]any
	if err := td.c.do(bg(), "GET", "/v1/audit?verify=1", nil, &v); err != nil || v["ok"] != true {
		t.Errorf("audit verify: %v %v", v, err)
	}
}

// A trigger refused because the store cannot write its create (the disk fills under a
// store that was healthy a moment before) is never typed: its caller sends it again once
// space returns, and it is then given once. Before, the typing beside the create went
// ahead and the refused trigger was typed twice.
func TestFullDiskRefusedNeverTyped(t *testing.T) {
	cfg := newTestConfig(t)
	cfg.StateDir = smallTmpfs(t, "4m")
	td := startDaemon(t, cfg)
	_, typed := rawCat(t, td, "w1", "rev")
	td.d.Rooms().DB.Flush() // the store is idle and healthy: the create meets the full disk first

	filler, err := os.Create(filepath.Join(cfg.StateDir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{64 << 10, 4 << 10, 1} {
		buf := make([]byte, size)
		for {
			if _, err := filler.Write(buf); err != nil {
				break
			}
		}
	}
	filler.Close()

	prompt := func(i int) string { return fmt.Sprintf("prompt %d ", i) + strings.Repeat("x", 16<<10) }
	var refused []string
	for i := 0; i < 5; i++ {
		id := fmt.Sprintf("rf-%d", i)
		_, err := td.trigger(map[string]any{"trigger_id": id, "thread_id": id, "workspace": "w1", "agent": "rev", "prompt": prompt(i)})
		var ae *api.Error
		if errors.As(err, &ae) && ae.ErrorCode == "UNAVAILABLE" {
			refused = append(refused, id)
		} else if err != nil {
			t.Fatalf("trigger %s: %v", id, err)
		}
	}
	if len(refused) == 0 {
		t.Fatal("the disk is full but every trigger was accepted")
	}
	time.Sleep(time.Second)
	b, _ := os.ReadFile(typed)
	for _, id := range refused {
		if strings.Contains(string(b), "id="+id+" ") {
			t.Errorf("trigger %s was refused (UNAVAILABLE) but typed", id)
		}
	}

	// Space returns; the caller sends the refused triggers again: each is given once.
	if err := os.Remove(filepath.Join(cfg.StateDir, "filler")); err != nil {
		t.Fatal(err)
	}
	for _, id := range refused {
		var i int
		fmt.Sscanf(id, "rf-%d", &i)
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			_, err := td.trigger(map[string]any{"trigger_id": id, "thread_id": id, "workspace": "w1", "agent": "rev", "prompt": prompt(i)})
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("trigger %s still refused after space returned: %v", id, err)
			}
		}
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		b, _ = os.ReadFile(typed)
		all := true
		for _, id := range refused {
			all = all && strings.Contains(string(b), "id="+id+" ")
		}
		if all {
			break
		}
	}
	time.Sleep(500 * time.Millisecond)
	b, _ = os.ReadFile(typed)
	for _, id := range refused {
		if n := strings.Count(string(b), "[BRIDGE_TRIGGER id="+id+" "); n != 1 {
			t.Errorf("trigger %s given %d times, want 1", id, n)
		}
	}
	t.Logf("%d of 5 refused while the disk was full, each given once after", len(refused))
}
