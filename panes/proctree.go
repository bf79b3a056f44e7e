package panes

import (
	"bytes"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// procTree is the set of processes a pane's program is made of, found by pid in this
// machine's process table (procTable: /proc on Linux, sysctl on macOS and FreeBSD): the pane's process and its descendants (every child, including one
// that left the pane's session with setsid), plus every process whose environment names
// the pane on this tmux server (TMUX_PANE=%N and TMUX=…,<server pid>,…): a child that
// daemonized (forked twice, its parent gone) is no descendant any more but still carries
// the environment tmux gave the pane. Not covered: a process that cleared that
// environment after it left the tree (env -i), or one that runs as another user (its
// environment cannot be read).
//
// Each process is held as its pid and its start time, so a pid reused by an unrelated
// process is never signalled. The daemon itself and its ancestors are never in the set.
type procTree struct {
	root   int    // the pane's process
	pane   string // %N
	server int    // the tmux server's pid (the pane process's parent); 0 if unknown
	procs  map[int]uint64
	skip   map[int]bool                            // this process and its ancestors
	kill   func(pid int, sig syscall.Signal) error // nil: signalProc (tests drop signals)
	tab    procTable
}

// newProcTree starts the set for the pane whose process is root, on the tmux server
// whose pid is server (0: root's parent) and whose socket is sock. A root from a listing
// of a live pane is trusted (tmux has not reaped it, so its pid cannot have been reused);
// any other (a dead pane's, the record's when tmux does not answer or the pane is gone)
// must prove it is the pane's process: its environment names the pane and the server,
// or the pane on a server of this socket that is gone (a server that exited numbers no
// more panes; its pid is then the one looked for in environments). A root that proves
// neither is dropped, and with it (when the server was to come from it) the search by
// environment.
func newProcTree(root int, pane string, trusted bool, server int, sock string) *procTree {
	return newProcTreeIn(hostProcs, root, pane, trusted, server, sock)
}

// newProcTreeIn is newProcTree over the process table tab.
func newProcTreeIn(tab procTable, root int, pane string, trusted bool, server int, sock string) *procTree {
	t := &procTree{root: root, pane: pane, server: server, procs: map[int]uint64{}, skip: map[int]bool{1: true}, tab: tab}
	for pid := os.Getpid(); pid > 1 && !t.skip[pid]; {
		t.skip[pid] = true
		st, ok := tab.stat(pid)
		if !ok {
			break
		}
		pid = st.ppid
	}
	if st, ok := tab.stat(root); ok && root > 0 {
		if t.server == 0 {
			t.server = st.ppid
		}
		if !trusted && !t.carriesPane(root) {
			if dead := deadServerOf(tab, root, pane, sock); dead > 0 {
				t.server = dead
			} else {
				t.root = 0
				if server == 0 {
					t.server = 0
				}
			}
		}
	} else {
		t.root = 0
	}
	t.skip[t.server] = true
	return t
}

// deadServerOf returns the server pid in pid's TMUX when pid's environment names pane
// on a tmux server of socket sock that no longer runs; 0 otherwise.
func deadServerOf(tab procTable, pid int, pane, sock string) int {
	if sock == "" {
		return 0
	}
	env := tab.environ(pid)
	tmux, tpane := envValue(env, "TMUX"), envValue(env, "TMUX_PANE")
	i := strings.LastIndexByte(tmux, ',')
	if tpane != pane || i < 0 {
		return 0
	}
	j := strings.LastIndexByte(tmux[:i], ',')
	if j < 0 || tmux[:j] != sock {
		return 0
	}
	server, err := strconv.Atoi(tmux[j+1 : i])
	if err != nil || server <= 1 {
		return 0
	}
	if st, ok := tab.stat(server); ok && st.state != 'Z' && st.state != 'X' {
		return 0 // still running
	}
	return server
}

// envValue returns the value of key in env, a NUL-separated environment ("" if unset).
func envValue(b []byte, key string) string {
	for kv := range bytes.SplitSeq(b, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte(key+"=")); ok {
			return string(v)
		}
	}
	return ""
}

// collect adds what belongs to the pane now: root and the descendants of every process
// held, and the processes that carry the pane's environment. One pass over the table.
func (t *procTree) collect() {
	stats := t.tab.list()
	children := map[int][]int{}
	for pid, st := range stats {
		children[st.ppid] = append(children[st.ppid], pid)
	}
	if st, ok := stats[t.root]; ok && t.root > 0 && t.server != 0 && st.ppid == t.server {
		t.add(t.root, st)
	}
	if t.server != 0 {
		for pid, st := range stats {
			if _, held := t.procs[pid]; !held && t.carriesPane(pid) {
				t.add(pid, st)
			}
		}
	}
	queue := make([]int, 0, len(t.procs))
	for pid := range t.procs {
		queue = append(queue, pid)
	}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range children[pid] {
			if _, held := t.procs[c]; !held && t.add(c, stats[c]) {
				queue = append(queue, c)
			}
		}
	}
}

func (t *procTree) add(pid int, st procStat) bool {
	if t.skip[pid] || pid <= 1 || st.state == 'Z' || st.state == 'X' {
		return false
	}
	t.procs[pid] = st.start
	return true
}

// carriesPane reports whether pid's environment has TMUX_PANE=<pane> and a TMUX naming
// this tmux server's pid.
func (t *procTree) carriesPane(pid int) bool {
	b := t.tab.environ(pid)
	if !bytes.Contains(b, []byte("TMUX_PANE="+t.pane+"\x00")) {
		return false
	}
	for kv := range bytes.SplitSeq(b, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte("TMUX=")); ok {
			f := bytes.Split(v, []byte(","))
			return len(f) >= 3 && string(f[len(f)-2]) == strconv.Itoa(t.server)
		}
	}
	return false
}

// alive returns the held processes still running (a zombie has ended), sorted. The
// ended ones stay held, so pids reports every process found.
func (t *procTree) alive() []int {
	var out []int
	for pid, start := range t.procs {
		if st, ok := t.tab.stat(pid); ok && st.start == start && st.state != 'Z' && st.state != 'X' {
			out = append(out, pid)
		}
	}
	slices.Sort(out)
	return out
}

// pids returns every process found, sorted.
func (t *procTree) pids() []int {
	out := make([]int, 0, len(t.procs))
	for pid := range t.procs {
		out = append(out, pid)
	}
	slices.Sort(out)
	return out
}

// signal sends sig to every held process still running, and SIGCONT after a SIGHUP or
// SIGTERM so a stopped process acts on it (as the kernel does on a terminal hangup).
func (t *procTree) signal(sig syscall.Signal) {
	for _, pid := range t.alive() {
		send := func(s syscall.Signal) { _ = signalProc(t.tab, pid, t.procs[pid], s) }
		if t.kill != nil {
			send = func(s syscall.Signal) { _ = t.kill(pid, s) }
		}
		send(sig)
		if sig != syscall.SIGKILL {
			send(syscall.SIGCONT)
		}
	}
}
