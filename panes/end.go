package panes

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nudgehq/nudge"
)

// Ending a pane's program, by pid (local workspaces).
//
// tmux ends a pane's program only by closing its pty (kill-pane, kill-window, respawn-pane
// -k): the kernel sends SIGHUP to the pane's session leader and foreground group. A
// program that ignores SIGHUP and C-c outlives that, and so does a child that left the
// pane's session or daemonized. Stop and every relaunch (Restart, an automatic restart,
// a fallback's RelaunchWith) therefore end the program by pid, one step after another,
// each step given a bounded time for every process found (procTree) to be gone:
//
//	stop       C-c (again every 2 s) for StopTimeout, then SIGHUP, SIGTERM, SIGKILL
//	relaunch   SIGHUP (what kill-window did), SIGTERM, SIGKILL
//
// each signal followed by up to KillGrace. The program counts as ended when none of its
// processes runs (a zombie has ended); only then is the pane killed or replaced. A
// program that outlives SIGKILL's grace (a process stuck in the kernel) fails the stop
// (STOP_FAILED) or the relaunch (SPAWN_FAILED), with the pids left, and nothing is launched
// over it. The audit says which step ended the program and when ("ended by SIGKILL after
// 3.1s"). A remote workspace's processes are not this machine's: there one ssh command
// runs the signal steps on the host (endremote.go).

// ender ends a pane's program by pid (procTree, the signal steps below) on this machine,
// or over ssh on a workspace's host (endremote.go), and stops runtimes (stop.go). It has
// no state of its own but the test hook kill and starts no goroutine: every step runs on
// the caller's, bounded.
type ender struct {
	cfg   *Config
	recs  *records
	conns *conns
	tmux  *tmuxClient
	kill  *func(pid int, sig syscall.Signal) error // Registry.kill; nil func means syscall.Kill
}

// Ended says how a pane's program ended; it is the audit's detail.
type Ended struct {
	By    string `json:"ended_by,omitempty"` // C-c, SIGHUP, SIGTERM, SIGKILL; "exited" when it ended before any step; "" when it did not end
	After string `json:"ended_after,omitempty"`
	PIDs  []int  `json:"pids,omitempty"` // every process found
	Left  []int  `json:"left,omitempty"` // still running after the last step: the end failed
	How   string `json:"how"`            // one line for people: "ended by SIGKILL after 3.1s (pids 10, 12)"
}

// OK reports whether the program ended.
func (e Ended) OK() bool { return len(e.Left) == 0 }

// endStep is one step: act, then wait up to wait for every process to be gone, acting
// again every repeat (0 = once).
type endStep struct {
	name   string
	act    func()
	wait   time.Duration
	repeat time.Duration
}

// endPoll is how often the processes are looked at while a step waits; endRescan is how
// often the set is searched again for processes the program started meanwhile.
const (
	endPoll   = 20 * time.Millisecond
	endRescan = 500 * time.Millisecond
)

// signalSteps are the steps after the polite ones: SIGHUP, SIGTERM, SIGKILL, each given
// KillGrace; SIGKILL is sent again to any process found meanwhile.
func (en *ender) signalSteps(t *procTree) []endStep {
	sig := func(s syscall.Signal) func() { return func() { t.signal(s) } }
	g := en.cfg.KillGrace
	return []endStep{
		{name: "SIGHUP", act: sig(syscall.SIGHUP), wait: g},
		{name: "SIGTERM", act: sig(syscall.SIGTERM), wait: g},
		{name: "SIGKILL", act: sig(syscall.SIGKILL), wait: g, repeat: 200 * time.Millisecond},
	}
}

// end runs steps until none of t's processes runs. It never waits longer than the sum of
// the steps' waits (plus one scan of /proc per endRescan).
func (en *ender) end(t *procTree, steps []endStep) Ended {
	began := time.Now()
	t.collect()
	e := Ended{}
	for _, s := range steps {
		if len(t.alive()) == 0 {
			break
		}
		if en.endStep(t, s) {
			e.By = s.name
			break
		}
	}
	if e.By == "" && len(t.alive()) == 0 {
		e.By = "exited"
	}
	e.PIDs = t.pids()
	after := time.Since(began).Round(100 * time.Millisecond)
	e.After = after.String()
	e.Left = t.alive()
	switch {
	case len(e.Left) > 0:
		e.By, e.After = "", ""
		e.How = fmt.Sprintf("did not end: pid %s still running %s after SIGKILL (%s in all)", joinPIDs(e.Left), en.cfg.KillGrace, after)
	case len(e.PIDs) == 0:
		e.How = "no process was running"
	case e.By == "exited":
		e.How = "ended before any signal (pid " + joinPIDs(e.PIDs) + ")"
	default:
		e.How = fmt.Sprintf("ended by %s after %s (pid %s)", e.By, after, joinPIDs(e.PIDs))
	}
	return e
}

// endStep acts and waits; true when every process is gone.
func (en *ender) endStep(t *procTree, s endStep) bool {
	t.collect()
	s.act()
	start := time.Now()
	lastAct, lastScan := start, start
	for {
		if len(t.alive()) == 0 {
			return true
		}
		now := time.Now()
		if now.Sub(start) >= s.wait {
			return false
		}
		if now.Sub(lastScan) >= endRescan {
			t.collect()
			lastScan = now
		}
		if s.repeat > 0 && now.Sub(lastAct) >= s.repeat {
			t.collect()
			s.act()
			lastAct = now
		}
		time.Sleep(endPoll)
	}
}

func joinPIDs(pids []int) string {
	s := make([]string, len(pids))
	for i, p := range pids {
		s[i] = fmt.Sprint(p)
	}
	return strings.Join(s, ", ")
}

// endForRelaunch ends the program in p (a live pane, or a dead one whose children may
// live on) before something is launched in its place: SIGHUP, SIGTERM, SIGKILL, on this
// machine or over ssh on the workspace's host (endremote.go; a live pane only). ok false
// means that could not run (no pid known, ssh failed, no /proc there): the old pane is
// then killed the old way.
func (en *ender) endForRelaunch(ctx context.Context, w *workspace, p paneInfo) (Ended, bool) {
	if p.PID <= 0 {
		return Ended{}, false
	}
	if host := w.hostName(); host != "" {
		if p.Dead {
			return Ended{}, false
		}
		return en.endRemote(ctx, host, p.PID)
	}
	t := en.paneProcs(ctx, w, p, !p.Dead)
	return en.end(t, en.signalSteps(t)), true
}

// endLeftovers ends what still runs of a runtime whose pane is gone (a human closed its
// window; a program that ignores SIGHUP outlived that): only when its recorded pid still
// runs and proves to be that pane's process on this server (a pane id alone is not
// enough: a restarted tmux server numbers its panes from %0 again), that process, its
// descendants and whatever carries the pane's environment. Local only.
func (en *ender) endLeftovers(ctx context.Context, w *workspace, rt *nudge.Runtime) Ended {
	if w.hostName() != "" || rt.PaneID == "" || rt.PID <= 0 {
		return Ended{}
	}
	t := en.paneProcs(ctx, w, paneInfo{ID: rt.PaneID, PID: rt.PID}, false)
	if t.root == 0 || t.server == 0 {
		return Ended{}
	}
	return en.end(t, en.signalSteps(t))
}

// paneProcs starts the process set of pane p (see newProcTree; trusted: p comes from a
// listing that shows it alive). For a pane not known alive it asks tmux for its server's
// pid, so the children of a program that already died are still found.
func (en *ender) paneProcs(ctx context.Context, w *workspace, p paneInfo, trusted bool) *procTree {
	server := 0
	if !trusted {
		server = en.serverPID(ctx, w)
	}
	return en.procTree(w, p, trusted, server)
}

// procTree is newProcTree with the socket of w's server and the registry's test hook.
func (en *ender) procTree(w *workspace, p paneInfo, trusted bool, server int) *procTree {
	t := newProcTree(p.PID, p.ID, trusted, server, localSocketPath(en.cfg, w.place().socket))
	if k := *en.kill; k != nil {
		t.kill = k
	}
	return t
}

// serverPID asks the workspace's tmux server for its pid; 0 if it does not answer.
func (en *ender) serverPID(ctx context.Context, w *workspace) int {
	out, err := en.tmux.run(ctx, w.place().server, "display-message", "-p", "#{pid}")
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(out))
	return pid
}

// endFailed is the error of a relaunch whose old program did not end.
func endFailed(e Ended) error {
	return nudge.NewError(nudge.SpawnFailed, "the old program "+e.How+": nothing launched over it")
}
