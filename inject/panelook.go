package inject

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/controlmode"
)

// An attempt's looks at a pane: one round trip each, read by pure functions of tmux's
// answer (the cursor's row, the pane's identity), so tests feed them recorded answers.

// paneCheck asks tmux, in one round trip, whether the pane exists, is alive and is not in
// a mode, and which envelope (if any) ends on the cursor's line: one typed but never
// entered. pending is that envelope's trigger id.
//
// It captures the screen from a few rows above where the lane last saw the cursor to the
// bottom, not the whole screen: in the same server step as the cursor's position, so the
// two agree. Only when the cursor is above that range, or an envelope ends at the cursor
// and its start is above it, does it look again at the whole screen. (A full capture of
// a 400x50 screen cost tmux ~150 µs of CPU against ~40 µs for a dozen rows, and the
// daemon the parsing of every row: the largest share of tmux's work per trigger after
// the typing itself.)
//
// seen is the pane's identity in the same server step (its id, dead or not, its pid):
// the final check after Enter reads it instead of asking tmux again.
func paneCheck(ctx context.Context, conn Sender, target string, l *paneWatch) (v verdict, stop bool, pending string, seen []string) {
	from := -1 // the whole screen
	if l != nil {
		if y := int(l.cursorY.Load()); y >= 0 {
			from = max(0, y-cursorMargin)
		}
	}
	v, stop, pending, seen, again := paneCheckFrom(ctx, conn, target, l, from)
	if again {
		v, stop, pending, seen, _ = paneCheckFrom(ctx, conn, target, l, -1)
	}
	return v, stop, pending, seen
}

// cursorMargin is how many rows above the cursor's last known row paneCheck captures: a
// composer that shrinks after Enter moves the cursor up a few rows.
const cursorMargin = 8

// paneCheckFrom is paneCheck with the capture starting at screen row from (-1: the whole
// screen). again says that rows above from are needed to decide.
func paneCheckFrom(ctx context.Context, conn Sender, target string, l *paneWatch, from int) (v verdict, stop bool, pending string, seen []string, again bool) {
	capture := "capture-pane -p -t " + quote(target)
	if from > 0 {
		capture += " -S " + strconv.Itoa(from)
	}
	rs, err := conn.DoAll(ctx,
		"display-message -p -t "+quote(target)+" '#{pane_dead} #{pane_in_mode} #{cursor_y} #{cursor_x} #{pane_id} #{pane_pid}'",
		capture)
	if err != nil {
		var ce *controlmode.CommandError
		switch {
		case errors.As(err, &ce):
			return verdict{kind: fallback, code: nudge.TargetNotFound, why: ce.Error()}, true, "", nil, false
		case connDown(err):
			return verdict{kind: waitConn, why: err.Error()}, true, "", nil, false
		}
		return verdict{kind: fallback, code: nudge.SendKeysError, why: err.Error()}, true, "", nil, false
	}
	var f []string
	if len(rs) == 2 && rs[0] != nil && len(rs[0].Lines) > 0 {
		f = strings.Fields(rs[0].Lines[0])
	}
	if len(f) == 6 {
		seen = []string{f[4], f[0], f[5]} // paneReplaced's fields: id, dead, pid
	}
	switch {
	case len(f) == 6 && f[0] == "1":
		return verdict{kind: fallback, code: nudge.PaneDead, why: "the pane's process has exited"}, true, "", seen, false
	case len(f) == 6 && f[1] == "1":
		return verdict{kind: hold, code: nudge.OperatorBusy, why: "pane is in copy mode"}, true, "", seen, false
	case len(f) == 6 && rs[1] != nil:
		row, err1 := strconv.Atoi(f[2])
		col, err2 := strconv.Atoi(f[3])
		if l != nil && err1 == nil && err2 == nil {
			l.cursorY.Store(int32(row))
		}
		if from <= 0 {
			return verdict{}, false, pendingEnvelope(rs[1].Lines, row, col), seen, false
		}
		rel := row - from
		if rel < 0 || rel >= len(rs[1].Lines) {
			return verdict{}, false, "", seen, true // the cursor is outside the rows captured
		}
		id := pendingEnvelope(rs[1].Lines, rel, col)
		if id == "" && envelopeAtCursor(rs[1].Lines, rel, col) {
			return verdict{}, false, "", seen, true // an envelope ends here and starts above
		}
		return verdict{}, false, id, seen, false
	}
	return verdict{}, false, "", seen, false
}

// envelopeEnd is the last thing an envelope puts on the screen. A TUI may wrap it after
// "[/", so only the rest of it is looked for at the end of the cursor's row.
const envelopeEnd = "[/BRIDGE_TRIGGER]"

// pendingEnvelope returns the id of the envelope whose end is the last text on the
// cursor's row with the cursor right after it (typed, never entered), or "". A cursor
// back at the start of the row (a raw-mode program echoing the Enter as CR) means the
// text was entered.
func pendingEnvelope(screen []string, cursorY, cursorX int) string {
	if !envelopeAtCursor(screen, cursorY, cursorX) {
		return ""
	}
	for y := cursorY; y >= 0; y-- {
		line := screen[y]
		if i := strings.LastIndex(line, "[BRIDGE_TRIGGER id="); i >= 0 {
			id := line[i+len("[BRIDGE_TRIGGER id="):]
			if k := strings.IndexByte(id, ' '); k >= 0 {
				id = id[:k]
			}
			return id
		}
	}
	return ""
}

// envelopeAtCursor reports whether an envelope's end is the last text on the cursor's
// row with the cursor right after it.
func envelopeAtCursor(screen []string, cursorY, cursorX int) bool {
	if cursorY < 0 || cursorY >= len(screen) {
		return false
	}
	row := strings.TrimRight(screen[cursorY], " ")
	// Cells, not runes, but a rune is at least one cell: a cursor left of the text's end
	// is caught, one at or past it is not.
	return strings.HasSuffix(row, envelopeEnd[2:]) && cursorX >= utf8.RuneCountInString(row)
}

// paneReplaced reports, before Enter and after it, whether the pane the envelope was typed
// into has died or been respawned since (its program killed mid-paste and restarted in the
// same pane id): Enter would then submit a cut prompt, or none, to another process, and
// the receipt would claim a delivery that did not happen. The attempt falls back instead.
func paneReplaced(ctx context.Context, conn Sender, target string, rt nudge.Runtime) (verdict, bool) {
	// display-message does not fail on a missing target (tmux gives it CMD_FIND_CANFAIL):
	// it expands the formats empty. The pane id in the answer tells a gone pane apart.
	r, err := conn.Do(ctx, "display-message -p -t "+quote(target)+" '#{pane_id} #{pane_dead} #{pane_pid}'")
	if err != nil {
		var ce *controlmode.CommandError
		switch {
		case errors.As(err, &ce):
			return verdict{kind: fallback, code: nudge.TargetNotFound, why: "pane gone before Enter: " + ce.Error()}, true
		case connDown(err):
			return verdict{kind: waitConn, why: err.Error()}, true
		}
		return verdict{kind: fallback, code: nudge.SendKeysError, why: err.Error()}, true
	}
	var f []string
	if r != nil && len(r.Lines) > 0 {
		f = strings.Fields(r.Lines[0])
	}
	return replacedVerdict(target, rt, f)
}

// replacedVerdict is paneReplaced's verdict on tmux's answer f: the pane's id, whether it
// is dead, its pid (no fields: tmux found no such pane).
func replacedVerdict(target string, rt nudge.Runtime, f []string) (verdict, bool) {
	switch {
	case len(f) != 3 || strings.HasPrefix(target, "%") && f[0] != target:
		return verdict{kind: fallback, code: nudge.TargetNotFound, why: "pane " + target + " is gone (replaced or closed) before it took the prompt"}, true
	case f[1] == "1":
		return verdict{kind: fallback, code: nudge.PaneDead, why: "the pane's process exited before it took the prompt"}, true
	case rt.PID != 0 && f[2] != strconv.Itoa(rt.PID):
		return verdict{kind: fallback, code: nudge.PaneDead, why: "the pane's process was replaced (pid " +
			strconv.Itoa(rt.PID) + " -> " + f[2] + ") before it took the prompt"}, true
	}
	return verdict{}, false
}

// goneVerdict is paneReplaced's verdict for an IfPane Enter that tmux refused: what it
// found instead of the pane the envelope was typed into.
func goneVerdict(target string, rt nudge.Runtime, gone *controlmode.PaneGoneError) verdict {
	switch {
	case gone.Pane == "":
		return verdict{kind: fallback, code: nudge.TargetNotFound, why: "pane " + target + " is gone (replaced or closed) before it took the prompt"}
	case gone.Dead:
		return verdict{kind: fallback, code: nudge.PaneDead, why: "the pane's process exited before it took the prompt"}
	case atShell(gone) && (rt.PID == 0 || gone.PID == rt.PID):
		return verdict{kind: fallback, code: nudge.UnmanagedRuntime, why: atShellWhy(gone)}
	}
	return verdict{kind: fallback, code: nudge.PaneDead, why: "the pane's process was replaced (pid " +
		strconv.Itoa(rt.PID) + " -> " + strconv.Itoa(gone.PID) + ") before it took the prompt"}
}

// atShell reports whether an IfAgent guard refused a live pane because a shell holds its
// foreground: the agent the user started from that shell exited or was suspended (seed
// 004), and what is typed there would run as commands. Nothing was typed. The trigger
// goes to the fallback chain as UNMANAGED_RUNTIME: the pane does not run the agent nudge
// may drive, and that code keeps the chain from ending or replacing its program (the
// user's shell): a fallback starts beside it.
func atShell(gone *controlmode.PaneGoneError) bool {
	return gone.Shell && gone.Pane != "" && !gone.Dead
}

func atShellWhy(gone *controlmode.PaneGoneError) string {
	return "the foreground program of pane " + gone.Pane + " is the shell " + gone.Command +
		", not the agent (it exited or was suspended back to the shell it was started from): nothing was typed"
}
