package tui

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/rivo/uniseg"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/view"
)

// RuntimeState is rt's state in one word: the one word every view of a runtime shows
// (`nudge ls`, `nudge status`, the status bar, the dashboard).
func RuntimeState(rt nudge.Runtime) string { return StateWord(rt.Status, rt.Readiness, rt.Paused) }

// StateWord is a runtime's state in one word (view.StateWord).
func StateWord(status nudge.Status, readiness nudge.Readiness, paused bool) string {
	return view.StateWord(status, readiness, paused)
}

// ReceiptWord summarises a receipt: state, result, error code and fallback (view.ReceiptWord).
func ReceiptWord(state nudge.TriggerState, result nudge.Result, code nudge.Code, fallback string) string {
	return view.ReceiptWord(state, result, code, fallback)
}

// Ago is a compact age: 5s, 3m, 2h, 4d.
func Ago(t time.Time, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	default:
		return fmt.Sprintf("%dd", int(d.Hours()/24))
	}
}

// Width is how many terminal cells s takes as tcell draws it: a wide character (CJK, most
// emoji) two, a combining mark none.
func Width(s string) int { return uniseg.StringWidth(s) }

// Truncate shortens s to at most n cells (see Width), ending in … when cut; a wide
// character is never split.
func Truncate(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if uniseg.StringWidth(s) <= n {
		return s
	}
	var b strings.Builder
	w := 0
	g := uniseg.NewGraphemes(s)
	for g.Next() {
		gw := g.Width()
		if w+gw > n-1 {
			break
		}
		b.WriteString(g.Str())
		w += gw
	}
	return b.String() + "…"
}

// pad is s cut or padded with spaces to exactly n cells.
func pad(s string, n int) string {
	s = Truncate(s, n)
	if k := Width(s); k < n {
		s += strings.Repeat(" ", n-k)
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// callTimeout bounds one call to the daemon or tmux: the dashboard shows what it has and
// says it is stale rather than wait longer.
const callTimeout = 5 * time.Second

// shortCtx bounds one request to the daemon.
func shortCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, callTimeout)
}
