package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/api"
)

// The daemon half of TestEventsAfterDaemonCrash runs in a child process (this test
// binary again), told where by these variables, so that it can be killed with SIGKILL.
const (
	crashStateEnv  = "NUDGE_CRASH_STATE_DIR"
	crashSocketEnv = "NUDGE_CRASH_SOCKET"
	crashTmuxEnv   = "NUDGE_CRASH_TMUX"
)

// A daemon killed with SIGKILL right after a reader got its events: after the restart,
// `nudge events --since` from before them either replays every one of them or fails with
// EVENTS_EXPIRED and where to resume; never a silent jump. Numbering goes on above
// everything the reader saw.
func TestEventsAfterDaemonCrash(t *testing.T) {
	cfg := newTestConfig(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestChildDaemonCrash$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), crashStateEnv+"="+cfg.StateDir, crashSocketEnv+"="+cfg.Socket, crashTmuxEnv+"="+cfg.Panes.SocketName)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	br := bufio.NewReader(out)
	var seen uint64
	for seen == 0 {
		line, err := br.ReadString('\n')
		if err != nil {
			cmd.Wait()
			t.Fatalf("the child daemon ended before it crashed: %v", err)
		}
		if v, ok := strings.CutPrefix(line, "seen "); ok {
			seen, _ = strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		}
	}
	cmd.Process.Kill() // SIGKILL: a crash
	cmd.Wait()

	td := startDaemon(t, cfg)
	c := api.NewClient(cfg.Socket, "")
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got []uint64
	err = c.Events(ctx, api.EventsOptions{Since: 10}, func(ev api.Event) error {
		got = append(got, ev.Seq)
		return nil
	})
	var ae *api.Error
	switch {
	case errors.As(err, &ae) && ae.ErrorCode == nudge.EventsExpired:
		if !strings.Contains(ae.Message, "could not be written") {
			t.Errorf("EVENTS_EXPIRED without the reason: %s", ae.Message)
		}
	case err != nil:
		t.Fatal(err)
	default:
		for i, seq := range got {
			if seq > seen {
				break
			}
			if seq != uint64(11+i) {
				t.Fatalf("since 10 after the crash: %v, a silent jump before %d (the reader saw up to %d)", got, seq, seen)
			}
		}
		if len(got) < int(seen-10) {
			t.Fatalf("since 10 after the crash: %d events, the reader saw up to %d", len(got), seen)
		}
	}
	if ev := td.d.Rooms().Events.Publish(Event{Type: "test"}); ev.Seq <= seen {
		t.Fatalf("after the crash numbering went back to %d: a reader saw %d", ev.Seq, seen)
	}
}

func TestChildDaemonCrash(t *testing.T) {
	if os.Getenv(crashStateEnv) == "" {
		t.Skip("run as a child by TestEventsAfterDaemonCrash")
	}
	cfg := newTestConfig(t)
	cfg.StateDir, cfg.Socket, cfg.Panes.SocketName = os.Getenv(crashStateEnv), os.Getenv(crashSocketEnv), os.Getenv(crashTmuxEnv)
	td := startDaemon(t, cfg)
	c := api.NewClient(cfg.Socket, "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	last := make(chan uint64, 1)
	go c.Events(ctx, api.EventsOptions{Follow: true}, func(ev api.Event) error {
		select {
		case <-last:
		default:
		}
		last <- ev.Seq
		return nil
	})
	waitFor := func(want uint64) {
		deadline := time.After(30 * time.Second)
		for {
			select {
			case seq := <-last:
				if seq == want {
					return
				}
			case <-deadline:
				t.Fatalf("the reader never got event %d", want)
			}
		}
	}
	var want uint64
	for i := range 300 {
		want = td.d.Rooms().Events.Publish(Event{Type: "test", Detail: mustJSON(map[string]int{"i": i})}).Seq
	}
	waitFor(want)
	// One more, the moment the reader is caught up: it reaches the reader well before
	// the store's next commit.
	want = td.d.Rooms().Events.Publish(Event{Type: "test"}).Seq
	waitFor(want)
	fmt.Printf("seen %d\n", want)
	select {} // until killed
}
