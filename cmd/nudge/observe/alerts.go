package observe

import (
	"fmt"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/api"
)

// Alert is the detail of an alert event: a timeout ratio over its threshold, a spike of
// fallbacks, or a runtime whose heartbeats went stale. The type is the client's (api.Alert),
// so a client decodes it without the daemon's packages.
type Alert = api.Alert

// AlertConfig holds the thresholds. A zero field takes its DefaultAlertConfig value.
type AlertConfig struct {
	TimeoutWindow  int           // closed triggers looked at (20)
	TimeoutMinimum int           // closed triggers needed before the ratio means anything (5)
	TimeoutRatio   float64       // alert above this share of timeouts (0.2)
	FallbackCount  int           // alert at this many fallbacks ... (3)
	FallbackWindow time.Duration // ... within this window (5m)
	HeartbeatStale time.Duration // a heartbeat older than this is stale (2m)
	HeartbeatCheck time.Duration // how often heartbeats are checked (15s)
	Cooldown       time.Duration // the same alert is not repeated sooner (5m)
}

// DefaultAlertConfig returns the thresholds nudge runs with.
func DefaultAlertConfig() AlertConfig {
	return AlertConfig{
		TimeoutWindow: 20, TimeoutMinimum: 5, TimeoutRatio: 0.2,
		FallbackCount: 3, FallbackWindow: 5 * time.Minute,
		HeartbeatStale: 2 * time.Minute, HeartbeatCheck: 15 * time.Second,
		Cooldown: 5 * time.Minute,
	}
}

// withDefaults fills every zero field from DefaultAlertConfig.
func (c AlertConfig) withDefaults() AlertConfig {
	d := DefaultAlertConfig()
	setInt(&c.TimeoutWindow, d.TimeoutWindow)
	setInt(&c.TimeoutMinimum, d.TimeoutMinimum)
	setInt(&c.FallbackCount, d.FallbackCount)
	if c.TimeoutRatio == 0 {
		c.TimeoutRatio = d.TimeoutRatio
	}
	setDur(&c.FallbackWindow, d.FallbackWindow)
	setDur(&c.HeartbeatStale, d.HeartbeatStale)
	setDur(&c.HeartbeatCheck, d.HeartbeatCheck)
	setDur(&c.Cooldown, d.Cooldown)
	return c
}

func setInt(p *int, def int) {
	if *p == 0 {
		*p = def
	}
}

func setDur(p *time.Duration, def time.Duration) {
	if *p == 0 {
		*p = def
	}
}

// Alerter turns receipts and runtime records into alerts. It has no goroutine; it is
// used by one goroutine at a time (the Observer's consumer) and is not safe for
// concurrent use.
type Alerter struct {
	cfg AlertConfig
	now func() time.Time

	outcomes  []bool // last TimeoutWindow closed triggers: true = timed out
	closed    map[string]bool
	fallbacks []time.Time
	fellBack  map[string]bool
	last      map[string]time.Time // alert key -> when it was last raised
}

// NewAlerter returns an Alerter with cfg's thresholds (zero fields defaulted) reading
// the time from now.
func NewAlerter(cfg AlertConfig, now func() time.Time) *Alerter {
	return &Alerter{cfg: cfg.withDefaults(), now: now, closed: map[string]bool{},
		fellBack: map[string]bool{}, last: map[string]time.Time{}}
}

// fire returns al if the key has not fired within the cooldown.
func (a *Alerter) fire(key string, al Alert) []Alert {
	now := a.now()
	if t, ok := a.last[key]; ok && now.Sub(t) < a.cfg.Cooldown {
		return nil
	}
	a.last[key] = now
	al.Time = now
	return []Alert{al}
}

// Trigger looks at one receipt (each trigger's fallback and close count once).
func (a *Alerter) Trigger(t nudge.Trigger) []Alert {
	var out []Alert
	if t.Fallback != "" && !a.fellBack[t.TriggerID] {
		out = append(out, a.fallback(t)...)
	}
	if t.Closed && !a.closed[t.TriggerID] {
		out = append(out, a.close(t)...)
	}
	return out
}

func (a *Alerter) fallback(t nudge.Trigger) []Alert {
	a.fellBack[t.TriggerID] = true
	now := a.now()
	a.fallbacks = append(a.fallbacks, now)
	keep := a.fallbacks[:0]
	for _, at := range a.fallbacks {
		if now.Sub(at) <= a.cfg.FallbackWindow {
			keep = append(keep, at)
		}
	}
	a.fallbacks = keep
	n := len(a.fallbacks)
	if n < a.cfg.FallbackCount {
		return nil
	}
	return a.fire("fallback_spike", Alert{Kind: "fallback_spike", Value: float64(n),
		Threshold: float64(a.cfg.FallbackCount), RuntimeID: t.RuntimeID,
		Message: fmt.Sprintf("%d fallbacks (resume/spawn) in the last %s", n, a.cfg.FallbackWindow)})
}

func (a *Alerter) close(t nudge.Trigger) []Alert {
	a.closed[t.TriggerID] = true
	a.outcomes = append(a.outcomes, t.Result == nudge.ResultTimeout)
	if len(a.outcomes) > a.cfg.TimeoutWindow {
		a.outcomes = a.outcomes[len(a.outcomes)-a.cfg.TimeoutWindow:]
	}
	if len(a.closed) > 4*a.cfg.TimeoutWindow+1024 { // bound memory; a re-seen id only recounts once
		a.closed = map[string]bool{t.TriggerID: true}
		a.fellBack = map[string]bool{}
	}
	timedOut := 0
	for _, x := range a.outcomes {
		if x {
			timedOut++
		}
	}
	n := len(a.outcomes)
	if n < a.cfg.TimeoutMinimum {
		return nil
	}
	r := float64(timedOut) / float64(n)
	if r <= a.cfg.TimeoutRatio {
		return nil
	}
	return a.fire("timeout_ratio", Alert{Kind: "timeout_ratio", Value: r, Threshold: a.cfg.TimeoutRatio,
		Message: fmt.Sprintf("%d of the last %d triggers timed out (threshold %.0f%%)", timedOut, n, a.cfg.TimeoutRatio*100)})
}

// WatchesHeartbeat says whether the stale-heartbeat alert watches rt: once it has sent a
// heartbeat, or from its start when its profile says its agent sends them
// (sendsHeartbeats). A runtime that never beats is never stale.
func WatchesHeartbeat(rt nudge.Runtime, sendsHeartbeats bool) bool {
	return !rt.LastHeartbeatAt.IsZero() || sendsHeartbeats
}

// Heartbeats checks the runtimes whose profile expects heartbeats (expects says which).
func (a *Alerter) Heartbeats(rts []nudge.Runtime, expects func(nudge.Runtime) bool) []Alert {
	var out []Alert
	now := a.now()
	for _, rt := range rts {
		switch rt.Status {
		case nudge.StatusOffline, nudge.StatusFailed, nudge.StatusDeregistered, nudge.StatusPaused, nudge.StatusStarting,
			nudge.StatusExited:
			continue
		}
		if expects == nil || !expects(rt) {
			continue
		}
		last := rt.LastHeartbeatAt
		if last.IsZero() {
			last = rt.CreatedAt
		}
		if age := now.Sub(last); age > a.cfg.HeartbeatStale {
			out = append(out, a.fire("stale_heartbeat/"+rt.RuntimeID, Alert{Kind: "stale_heartbeat", RuntimeID: rt.RuntimeID,
				Value: age.Seconds(), Threshold: a.cfg.HeartbeatStale.Seconds(),
				Message: fmt.Sprintf("no heartbeat from %s for %s", rt.RuntimeID, age.Round(time.Second))})...)
		}
	}
	return out
}
