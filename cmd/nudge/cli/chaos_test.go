package cli

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/store"
)

// Fault tests (issue 8): real daemon subprocesses, real tmux, real agents. The long
// variants run with NUDGE_CHAOS_LONG=1.

func chaosLong() bool { return os.Getenv("NUDGE_CHAOS_LONG") == "1" }

// chaosSeed returns a logged seed (NUDGE_CHAOS_SEED replays one).
func chaosSeed(t *testing.T) *rand.Rand {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("NUDGE_CHAOS_SEED"); s != "" {
		fmt.Sscan(s, &seed)
	}
	t.Logf("chaos seed %d (NUDGE_CHAOS_SEED replays it)", seed)
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// TestChaosKill9DuringTriggers SIGKILLs the daemon at random moments while concurrent
// orchestrator clients send 200 triggers (retrying with the same id on connection errors)
// to three shell runtimes (one paused for part of the run, so its triggers are deferred)
// and one agent that must acknowledge (its triggers sit in submitted awaiting the ack).
// Every accepted trigger must reach a final receipt, none may be typed more often than
// its recorded attempts (exactly once into a shell, where submitted is the ack), the
// store must open cleanly and the audit chain verify.
func TestChaosKill9DuringTriggers(t *testing.T) {
	rng := chaosSeed(t)
	n, kills := 200, 5
	if chaosLong() {
		n, kills = 1000, 20
	}
	bin := buildChaosNudge(t)
	cd := newChaosDaemon(t, bin)
	profDir, agent := writeAckProfile(t, cd.root)
	cd.args = []string{"--profile-dir", profDir, "--rate-limit", "100000/min",
		"--ack-timeout", "3s", "--ack-retries", "2", "--ack-backoff", "200ms,400ms",
		"--submit-quiet", "100ms", "--launch-grace", "300ms", "--max-defer", "10m"}
	cd.start()

	files := map[string]string{}
	ids := map[string]string{}
	for _, role := range []string{"a", "b", "c"} {
		files[role] = filepath.Join(cd.root, role+".lines")
		rt := cd.spawn(spawnBody{Workspace: "w1", Role: role, Agent: "shell",
			Argv: []string{"sh", "-c", "exec cat >> " + files[role]}})
		ids[role] = rt.RuntimeID
	}
	roles := []string{"a", "b", "c"}
	// The acknowledging agent: its triggers sit in submitted awaiting the ack. Once a
	// fallback has relaunched it, its pane runs the profile's resume or launch command,
	// which writes to resumed.lines or fresh.lines: what it read is the sum of the three.
	extra := map[string][]string{}
	if os.Getenv("NUDGE_CHAOS_ACK") != "0" {
		files["ak"] = filepath.Join(cd.root, "ak.lines")
		extra["ak"] = []string{filepath.Join(cd.root, "fresh.lines"), filepath.Join(cd.root, "resumed.lines")}
		ids["ak"] = cd.spawn(spawnBody{Workspace: "w1", Role: "ak", Agent: "acker", SessionID: "sess-ak",
			Argv: []string{"sh", agent, files["ak"], "ack"}}).RuntimeID
		roles = append(roles, "ak")
	}
	if err := cd.call("POST", "/v1/runtimes/"+ids["c"]+"/pause", nil, nil); err != nil {
		t.Fatalf("pause: %v", err)
	}

	// Clients: 8 orchestrators, each retrying its trigger until it gets an answer.
	type result struct {
		id, role string
		tr       nudge.Trigger
		tries    int
		err      error
	}
	work := make(chan int)
	results := make(chan result, n)
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				role := roles[i%len(roles)]
				id := fmt.Sprintf("k9-%04d", i)
				req := map[string]any{"trigger_id": id, "workspace": "w1", "agent": role,
					"prompt": fmt.Sprintf("chaos prompt %d for %s", i, role)}
				tr, tries, err := cd.submitRetry(ctx, req)
				results <- result{id, role, tr, tries, err}
			}
		}()
	}
	feedRng := rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64())) // its own: rng is the killer's
	go func() {
		for i := range n {
			work <- i
			time.Sleep(time.Duration(feedRng.IntN(30)) * time.Millisecond)
		}
		close(work)
	}()
	clientsDone := make(chan struct{})
	go func() { wg.Wait(); close(clientsDone) }()

	// The killer: SIGKILL at random moments, restart on the same state dir. The paused
	// runtime is resumed after the second restart (its deferred triggers then deliver).
	done := false
	for k := 0; k < kills || !done; k++ {
		select {
		case <-clientsDone:
			done = true
		case <-time.After(time.Duration(150+rng.IntN(1200)) * time.Millisecond):
		}
		if k >= kills && done {
			break
		}
		cd.kill9()
		time.Sleep(time.Duration(rng.IntN(300)) * time.Millisecond)
		cd.start()
		if k == 1 {
			if err := cd.call("POST", "/v1/runtimes/"+ids["c"]+"/resume", nil, nil); err != nil {
				t.Fatalf("resume: %v", err)
			}
		}
	}
	<-clientsDone
	close(results)
	// Two more kills while acks, retries and deferred triggers are pending.
	for range 2 {
		time.Sleep(time.Duration(100+rng.IntN(700)) * time.Millisecond)
		cd.kill9()
		cd.start()
	}

	accepted := map[string]string{} // id -> role
	retried := 0
	for r := range results {
		if r.err != nil {
			t.Errorf("%s: no answer: %v", r.id, r.err)
			continue
		}
		if r.tr.TriggerID != r.id {
			t.Errorf("%s: answer for %q", r.id, r.tr.TriggerID)
		}
		accepted[r.id] = r.role
		if r.tries > 1 {
			retried++
		}
	}
	t.Logf("%d accepted, %d after client retries, %d daemon starts", len(accepted), retried, cd.starts)
	var all []string
	for id := range accepted {
		all = append(all, id)
	}
	sort.Strings(all)
	got := cd.waitClosed(all, 2*time.Minute)

	// Count what each agent read.
	typed := map[string]int{}
	for _, role := range roles {
		for _, file := range append([]string{files[role]}, extra[role]...) {
			for id, c := range countIDs(file) {
				if accepted[id] != role {
					t.Errorf("%s typed into %s, but it was sent to %q", id, role, accepted[id])
				}
				typed[id] += c
			}
		}
	}
	states := map[string]int{}
	for _, id := range all {
		tr, role := got[id], accepted[id]
		states[string(tr.State)+"/"+string(tr.ErrorCode)+"/"+tr.Fallback]++
		c := typed[id]
		switch {
		case c > tr.Attempts:
			t.Errorf("%s (%s): typed %d times, %d attempts recorded: %+v\n%s", id, role, c, tr.Attempts, tr, cd.auditStory(id))
		case role != "ak" && (c != 1 || tr.State != "acked"):
			t.Errorf("%s (%s): typed %d times into a shell, receipt %s %s: %s", id, role, c, tr.State, tr.ErrorCode, cd.auditStory(id))
		case role == "ak" && tr.Fallback == "" && c == 0:
			t.Errorf("%s (%s): closed %s without being typed: %s", id, role, tr.State, cd.auditStory(id))
		}
	}
	t.Logf("final receipts: %v", states)
	if ok, recs, msg := cd.auditVerify(); !ok {
		t.Errorf("audit chain does not verify after %d records: %s", recs, msg)
	}

	// No control client of a killed incarnation stays attached (unread, its backlog
	// growing in the tmux server): only the live daemon's two remain.
	if out, _ := cd.tmux("list-clients", "-F", "#{client_pid} #{client_flags}"); strings.Count(out, "control-mode") > 2 {
		t.Errorf("stale control clients attached:\n%s", out)
	}

	// The store, opened directly after a last kill -9, holds every accepted trigger closed.
	cd.kill9()
	db, err := store.Open(filepath.Join(cd.stateDir, "nudge.db"), store.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("store after kill -9: %v", err)
	}
	defer db.Close()
	for _, id := range all {
		tr, err := db.Triggers().GetTrigger(id)
		if err != nil || !tr.Closed {
			t.Errorf("%s in store: %+v %v", id, tr, err)
		}
	}
	if open, err := db.Triggers().ListTriggers(store.TriggerFilter{OpenOnly: true}); err != nil || len(open) != 0 {
		t.Errorf("open triggers left in the store: %d %v", len(open), err)
	}
	if n, err := db.AuditLog().VerifyAudit(); err != nil {
		t.Errorf("audit verify on the store: %d records: %v", n, err)
	}
}
