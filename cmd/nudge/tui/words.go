package tui

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nudgehq/nudge"
)

// StateWord is a runtime's state in one word: the lifecycle status when it says the agent
// cannot take prompts (PAUSED, FAILED, OFFLINE, EXITED, STARTING, ...), else the
// detector's readiness.
func StateWord(status nudge.Status, readiness nudge.Readiness, paused bool) string {
	switch status {
	case nudge.StatusFailed, nudge.StatusOffline, nudge.StatusStarting, nudge.StatusDeregistered,
		nudge.StatusFallbackResume, nudge.StatusSpawnRecovery, nudge.StatusExited:
		return strings.ToUpper(string(status))
	}
	if paused || status == nudge.StatusPaused {
		return "PAUSED"
	}
	if readiness == "" {
		return string(nudge.Unknown)
	}
	return string(readiness)
}

// ReceiptWord summarises a receipt: state, result, error code and fallback.
func ReceiptWord(state nudge.TriggerState, result nudge.Result, code nudge.Code, fallback string) string {
	s := string(state)
	if result != "" && string(result) != string(state) {
		s += "/" + string(result)
	}
	if code != "" {
		s += " " + string(code)
	}
	if fallback != "" {
		s += " (" + fallback + ")"
	}
	return s
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

// Truncate shortens s to n runes, ending in … when cut.
func Truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	if n <= 1 {
		return string(r[:n])
	}
	return string(r[:n-1]) + "…"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// shortCtx bounds one request to the daemon.
func shortCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, 30*time.Second)
}
