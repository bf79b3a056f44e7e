package cli

import (
	"fmt"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
)

// Alerts reach /v1/events subscribers and the log via the daemon's observer.
func TestAlertPublishedOnHub(t *testing.T) {
	td := startDaemon(t, newTestConfig(t))
	sub := td.d.Rooms().Events.Subscribe()
	defer td.d.Rooms().Events.Unsubscribe(sub)
	// Hand the observer five timed-out receipts, as the pipeline's hook does.
	for i := range 5 {
		td.d.Rooms().Observer.Trigger(nudge.Trigger{TriggerID: fmt.Sprintf("x%d", i), Closed: true, Result: "timeout"})
	}
	deadline := time.After(20 * time.Second)
	for {
		select {
		case ev := <-sub.C:
			if ev.Type == "alert" {
				return
			}
		case <-deadline:
			t.Fatal("no alert event")
		}
	}
}
