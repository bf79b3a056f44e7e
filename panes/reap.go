package panes

import (
	"context"
	"time"
)

// Why a dead pane can lack its exit status, and what nudge does about it.
//
// tmux learns how a pane's process ended from SIGCHLD: its handler calls waitpid and fills
// in pane_dead_status or pane_dead_signal. tmux before 3.6 built with libutempter (Debian's
// and Ubuntu's 3.3a are) calls utempter_remove_record when a pane's pty closes
// (server_destroy_pane), and libutempter sets SIGCHLD to SIG_DFL while its helper runs. The
// pty closes a moment before the process finishes exiting; when the exit lands inside that
// window (more often on a loaded machine) its SIGCHLD is discarded. The pane then reads
// dead with no status, its process stays a zombie of the server, and the status appears
// only when another child of the server exits (tmux issues #311 and #4559; fixed in 3.6 by
// sending SIGCHLD after utempter_remove_record, as 3.3a already does after
// utempter_add_record). Seen on 3.3a: the server's -vv log has the pane's "%N error" (pty
// closed) and no "%N exited" until a later child's SIGCHLD; an strace of the server shows
// rt_sigaction(SIGCHLD, SIG_DFL), the helper's clone and wait4, the pane process exiting
// and its SIGCHLD arriving in between, the handler restored, and no wait4(-1) after; the
// process stays in state Z. With a program that sleeps a second and exits, one pane in
// five to ten lost its status this way on an idle 2-core machine.
//
// reap does what that fix does from outside: `run-shell -b true` makes the server fork a
// child that exits at once, whose SIGCHLD runs the handler, whose waitpid loop reaps every
// exited child, the pane's included. Harmless on a tmux without the bug.

// reapEvery spaces the reap requests for one workspace while a death lacks its status.
const reapEvery = 200 * time.Millisecond

// reap asks the workspace's tmux server to reap its exited children (see above), over
// the control connection when there is one.
func (cs *conns) reap(ctx context.Context, w *workspace) {
	now := cs.cfg.Now().UnixNano()
	if last := w.lastReap.Load(); last != 0 && time.Duration(now-last) < reapEvery {
		return
	}
	w.lastReap.Store(now)
	cs.stats.Reaps.Add(1)
	if c := w.current(); c != nil {
		bctx, cancel := cs.tmux.boundCtx(ctx)
		_, err := c.Do(bctx, "run-shell -b true")
		cancel()
		if err == nil {
			return
		}
	}
	if _, err := cs.tmux.run(ctx, w.place().server, "run-shell", "-b", "true"); err != nil {
		cs.cfg.Logger.Debug("reap: run-shell", "workspace", w.name, "error", err)
	}
}
