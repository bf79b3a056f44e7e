package observe

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
)

// The Observer counts what it is handed, hands alerts back, checks heartbeats on its
// tick, and stops with Close.
func TestObserverAlertsAndHeartbeats(t *testing.T) {
	alerts := make(chan Alert, 16)
	now := time.Now()
	bus := nudge.NewBus()
	defer bus.Close()
	nudge.Subscribe(nudge.NewClient(bus, "test", 16), func(a Alert) { alerts <- a })
	o, err := New(Config{Bus: bus,
		Live: Live{Runtimes: func() []nudge.Runtime {
			return []nudge.Runtime{{RuntimeID: "rt_w.hb", Agent: "codex", Status: "ready", LastHeartbeatAt: now.Add(-time.Hour)}}
		}},
		ExpectsHeartbeat: func(rt nudge.Runtime) bool { return rt.Agent == "codex" },
		Alerts:           AlertConfig{HeartbeatCheck: 10 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	for i := range 5 {
		o.Trigger(nudge.Trigger{TriggerID: fmt.Sprintf("x%d", i), CreatedAt: time.Now(), Closed: true, Result: "timeout"})
	}
	kinds := map[string]bool{}
	deadline := time.After(20 * time.Second)
	for !kinds["timeout_ratio"] || !kinds["stale_heartbeat"] {
		select {
		case a := <-alerts:
			kinds[a.Kind] = true
		case <-deadline:
			t.Fatalf("alerts seen: %v", kinds)
		}
	}
	var b bytes.Buffer
	if err := o.WritePrometheus(&b); err != nil {
		t.Fatal(err)
	}
	fams := parse(t, b.Bytes())
	if got := fams["trigger_timeout_total"].GetMetric()[0].GetCounter().GetValue(); got != 5 {
		t.Errorf("trigger_timeout_total %v, want 5", got)
	}
	if got := fams["nudge_alerts_total"].GetMetric()[0].GetCounter().GetValue(); got < 2 {
		t.Errorf("nudge_alerts_total %v, want >= 2", got)
	}
	o.Close()
	o.Close() // idempotent
	o.Trigger(nudge.Trigger{TriggerID: "late"})
	o.Workspace("w") // no status line: a no-op
}

// A consumer that falls behind drops receipts and counts them; Trigger never blocks.
func TestObserverDropsWhenBehind(t *testing.T) {
	block, blocked := make(chan struct{}), make(chan struct{}, 1)
	o, err := New(Config{Inbox: 1, Alerts: AlertConfig{HeartbeatCheck: time.Millisecond},
		Live: Live{Runtimes: func() []nudge.Runtime { return []nudge.Runtime{{RuntimeID: "rt_w.hb", Status: "ready"}} }},
		ExpectsHeartbeat: func(nudge.Runtime) bool {
			select {
			case blocked <- struct{}{}:
			default:
			}
			<-block // the observer's goroutine is stuck in its heartbeat check
			return false
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	defer close(block)
	<-blocked
	for i := range 50 {
		o.Trigger(nudge.Trigger{TriggerID: fmt.Sprintf("x%d", i), Closed: true, Result: "timeout"})
	}
	var b bytes.Buffer
	if err := o.WritePrometheus(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "\nnudge_observer_dropped_total ") || o.metrics.dropped.Get() == 0 {
		t.Fatalf("nothing dropped:\n%s", b.String())
	}
}

// Close joins every goroutine the Observer started: none is left once it returns.
func TestObserverCloseJoins(t *testing.T) {
	conn := &fakeConn{sent: make(chan struct{}, 1)}
	o, err := New(Config{Status: &StatusConfig{
		Workspaces: func() []string { return []string{"w"} },
		Line:       func(string) string { return "[a: READY]" },
		Conn:       func(string) (Doer, error) { return conn, nil },
	}})
	if err != nil {
		t.Fatal(err)
	}
	o.Workspace("w")
	o.Trigger(nudge.Trigger{TriggerID: "t1"})
	<-conn.sent
	o.Close()
	// Close returns once each goroutine has closed its done channel (deferred): its frame
	// may still be on its way out for a moment, never longer.
	var stacks string
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		buf := make([]byte, 1<<20)
		stacks = string(buf[:runtime.Stack(buf, true)])
		if !strings.Contains(stacks, "observe.(*Observer).run") && !strings.Contains(stacks, "observe.(*StatusLine).run") || time.Now().After(deadline) {
			break
		}
	}
	for _, fn := range []string{"observe.(*Observer).run", "observe.(*StatusLine).run"} {
		if strings.Contains(stacks, fn) {
			t.Errorf("%s still running 2 s after Close", fn)
		}
	}
}
