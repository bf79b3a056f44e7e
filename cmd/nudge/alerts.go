package main

import (
	"fmt"
	"time"

	"github.com/nudgehq/nudge"
)

// alert is the detail of an Event{Type: "alert"}.
type alert struct {
	Kind      string    `json:"kind"` // timeout_ratio, fallback_spike, stale_heartbeat
	Message   string    `json:"message"`
	RuntimeID string    `json:"runtime_id,omitempty"`
	Value     float64   `json:"value,omitempty"`
	Threshold float64   `json:"threshold,omitempty"`
	Time      time.Time `json:"time"`
}

// alertConfig holds the thresholds; zero values take the defaults in withDefaults.
type alertConfig struct {
	TimeoutWindow  int           // closed triggers looked at (20)
	TimeoutMinimum int           // closed triggers needed before the ratio means anything (5)
	TimeoutRatio   float64       // alert above this share of timeouts (0.2)
	FallbackCount  int           // alert at this many fallbacks ... (3)
	FallbackWindow time.Duration // ... within this window (5m)
	HeartbeatStale time.Duration // a heartbeat older than this is stale (2m)
	HeartbeatCheck time.Duration // how often heartbeats are checked (15s)
	Cooldown       time.Duration // the same alert is not repeated sooner (5m)
}

func (c alertConfig) withDefaults() alertConfig {
	if c.TimeoutWindow == 0 {
		c.TimeoutWindow = 20
	}
	if c.TimeoutMinimum == 0 {
		c.TimeoutMinimum = 5
	}
	if c.TimeoutRatio == 0 {
		c.TimeoutRatio = 0.2
	}
	if c.FallbackCount == 0 {
		c.FallbackCount = 3
	}
	if c.FallbackWindow == 0 {
		c.FallbackWindow = 5 * time.Minute
	}
	if c.HeartbeatStale == 0 {
		c.HeartbeatStale = 2 * time.Minute
	}
	if c.HeartbeatCheck == 0 {
		c.HeartbeatCheck = 15 * time.Second
	}
	if c.Cooldown == 0 {
		c.Cooldown = 5 * time.Minute
	}
	return c
}

// alerter turns receipts and runtime records into alerts. It is used by one goroutine
// (the observer's consumer) and is not safe for concurrent use.
type alerter struct {
	cfg alertConfig
	now func() time.Time

	outcomes  []bool // last TimeoutWindow closed triggers: true = timed out
	closed    map[string]bool
	fallbacks []time.Time
	fellBack  map[string]bool
	last      map[string]time.Time // alert key -> when it was last raised
}

func newAlerter(cfg alertConfig, now func() time.Time) *alerter {
	return &alerter{cfg: cfg.withDefaults(), now: now, closed: map[string]bool{},
		fellBack: map[string]bool{}, last: map[string]time.Time{}}
}

// fire returns a if the key has not fired within the cooldown.
func (a *alerter) fire(key string, al alert) []alert {
	now := a.now()
	if t, ok := a.last[key]; ok && now.Sub(t) < a.cfg.Cooldown {
		return nil
	}
	a.last[key] = now
	al.Time = now
	return []alert{al}
}

// trigger looks at one receipt.
func (a *alerter) trigger(t nudge.Trigger) []alert {
	var out []alert
	if t.Fallback != "" && !a.fellBack[t.TriggerID] {
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
		if n := len(a.fallbacks); n >= a.cfg.FallbackCount {
			out = append(out, a.fire("fallback_spike", alert{Kind: "fallback_spike", Value: float64(n),
				Threshold: float64(a.cfg.FallbackCount), RuntimeID: t.RuntimeID,
				Message: fmt.Sprintf("%d fallbacks (resume/spawn) in the last %s", n, a.cfg.FallbackWindow)})...)
		}
	}
	if t.Closed && !a.closed[t.TriggerID] {
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
		if n := len(a.outcomes); n >= a.cfg.TimeoutMinimum {
			if r := float64(timedOut) / float64(n); r > a.cfg.TimeoutRatio {
				out = append(out, a.fire("timeout_ratio", alert{Kind: "timeout_ratio", Value: r, Threshold: a.cfg.TimeoutRatio,
					Message: fmt.Sprintf("%d of the last %d triggers timed out (threshold %.0f%%)", timedOut, n, a.cfg.TimeoutRatio*100)})...)
			}
		}
	}
	return out
}

// heartbeats checks the runtimes whose profile expects heartbeats.
func (a *alerter) heartbeats(rts []nudge.Runtime, expects func(nudge.Runtime) bool) []alert {
	var out []alert
	now := a.now()
	for _, rt := range rts {
		switch rt.Status {
		case nudge.StatusOffline, nudge.StatusFailed, nudge.StatusDeregistered, nudge.StatusPaused, nudge.StatusStarting,
			nudge.StatusExited:
			continue
		}
		if !expects(rt) {
			continue
		}
		last := rt.LastHeartbeatAt
		if last.IsZero() {
			last = rt.CreatedAt
		}
		if age := now.Sub(last); age > a.cfg.HeartbeatStale {
			out = append(out, a.fire("stale_heartbeat/"+rt.RuntimeID, alert{Kind: "stale_heartbeat", RuntimeID: rt.RuntimeID,
				Value: age.Seconds(), Threshold: a.cfg.HeartbeatStale.Seconds(),
				Message: fmt.Sprintf("no heartbeat from %s for %s", rt.RuntimeID, age.Round(time.Second))})...)
		}
	}
	return out
}
