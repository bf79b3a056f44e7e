package panes

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/nudgehq/nudge/controlmode"
)

// Ending a pane's program on a remote host (a workspace bound to --host): the daemon
// cannot read that host's /proc, so one ssh command runs endRemoteScript there, which
// does what end does locally for the pane's process and its descendants (a child that
// left the session with setsid included): SIGHUP, SIGTERM, SIGKILL, each followed by up
// to KillGrace for all of them to be gone, every process held with its start time. Not
// covered there: a child that daemonized (reparented away; the environment is not
// searched remotely), and a host without /proc (the old way then: kill-pane).

// endRemoteScript runs as `sh -s -- ROOT GRACE` (GRACE in tenths of a second) and prints
// one line: "ended SIG PID..." ("ended exited" when ROOT was gone), "left PID...", or
// "unsupported".
const endRemoteScript = `r=$1 g=$2
[ -r /proc/$$/stat ] || { echo unsupported; exit 0; }
st() {
	{ read -r l < "/proc/$1/stat"; } 2>/dev/null || return 1
	l=${l##*) }
	set -- $l
	S=$1 P=$2
	shift 19
	T=$1
}
st "$r" && [ "$S" != Z ] || { echo ended exited; exit 0; }
H=" $r:$T "
grow() {
	n=0
	for d in /proc/[0-9]*; do
		p=${d#/proc/}
		case $H in *" $p:"*) continue ;; esac
		st "$p" || continue
		case $H in *" $P:"*) H="$H$p:$T "; n=1 ;; esac
	done
	[ $n = 1 ]
}
alive() {
	A=
	for e in $H; do
		p=${e%%:*}
		st "$p" && [ "$T" = "${e#*:}" ] && [ "$S" != Z ] && A="$A $p"
	done
}
for s in HUP TERM KILL; do
	while grow; do :; done
	alive
	for p in $A; do
		kill -s $s "$p" 2>/dev/null
		[ $s = KILL ] || kill -s CONT "$p" 2>/dev/null
	done
	i=0
	while :; do
		alive
		if [ -z "$A" ]; then
			echo ended $s $(for e in $H; do echo "${e%%:*}"; done)
			exit 0
		fi
		[ $i -ge $g ] && break
		sleep 0.1 2>/dev/null || sleep 1
		i=$((i+1))
	done
done
echo left$A
`

// endRemote ends the program whose (remote) pid is root on host. ok false: it could not
// be run there (ssh failed, no /proc); the caller goes the old way.
func (en *ender) endRemote(ctx context.Context, host string, root int) (Ended, bool) {
	tenths := int(en.cfg.KillGrace / (100 * time.Millisecond))
	ctx, cancel := context.WithTimeout(ctx, 3*en.cfg.KillGrace+en.cfg.CommandTimeout)
	defer cancel()
	argv := controlmode.SSHArgv(en.cfg.SSH, en.cfg.SSHConfig, host, []string{"sh", "-s", "--", strconv.Itoa(root), strconv.Itoa(max(tenths, 1))})
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = controlmode.ChildEnv(os.Environ())
	cmd.Stdin = strings.NewReader(endRemoteScript)
	cmd.WaitDelay = 2 * time.Second
	began := time.Now()
	out, err := cmd.Output()
	f := strings.Fields(string(out))
	if err != nil || len(f) < 2 || f[0] != "ended" && f[0] != "left" {
		if err != nil {
			en.cfg.Logger.Warn("end the program on its host", "host", host, "pid", root, "error", err)
		}
		return Ended{}, false
	}
	after := time.Since(began).Round(100 * time.Millisecond)
	var pids []int
	for _, s := range f[1:] {
		if n, err := strconv.Atoi(s); err == nil {
			pids = append(pids, n)
		}
	}
	switch {
	case f[0] == "left":
		return Ended{Left: pids, PIDs: pids, How: fmt.Sprintf("did not end on host %s: pid %s still running %s after SIGKILL (%s in all)", host, joinPIDs(pids), en.cfg.KillGrace, after)}, true
	case f[1] == "exited":
		return Ended{By: "exited", How: "no process was running on host " + host}, true
	default:
		pids = pids[:0]
		for _, s := range f[2:] {
			if n, err := strconv.Atoi(s); err == nil {
				pids = append(pids, n)
			}
		}
		by := "SIG" + f[1]
		return Ended{By: by, After: after.String(), PIDs: pids,
			How: fmt.Sprintf("ended by %s after %s on host %s (pid %s)", by, after, host, joinPIDs(pids))}, true
	}
}
