package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/nudgehq/nudge/cmd/nudge/standin"
)

// codexFloor sends r.floor messages through Codex's own channel, `codex queue --thread
// SESSION --message TEXT` (its app-server daemon, no keystrokes), one at a time to the
// idle session, and prints the command's start → the model's first call holding the
// message: the floor that nudge's accepted → model request compares with.
func (r *run) codexFloor(srv *standin.Server, cli string, rt runtime) error {
	var view struct {
		SessionID string `json:"session_id"`
	}
	for deadline := time.Now().Add(10 * time.Second); view.SessionID == "" && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		r.call("GET", "/v1/runtimes/"+rt.RuntimeID, nil, &view)
	}
	if view.SessionID == "" {
		return fmt.Errorf("codex floor: the runtime has no session id")
	}
	var toModel, ran []time.Duration
	for k := range r.floor {
		time.Sleep(r.replyDelay + time.Second) // the previous turn ends first
		msg := fmt.Sprintf("agentturns floor message %d-%d", os.Getpid(), k)
		cmd := exec.Command(cli, "queue", "--thread", view.SessionID, "--message", msg)
		cmd.Env = append(os.Environ(), r.env...)
		start := time.Now()
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("codex queue: %v: %s", err, out)
		}
		ran = append(ran, time.Since(start))
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if at, ok := seenText(srv.Requests(), msg); ok {
				toModel = append(toModel, at.Sub(start))
				break
			}
		}
	}
	fmt.Printf("  codex queue (the agent's own channel, idle session): %d sent, %d reached the model, start → model request p50 %v p95 %v, command ran p50 %v\n",
		r.floor, len(toModel), pct(toModel, 50), pct(toModel, 95), pct(ran, 50))
	return nil
}

// seenText returns when the model first got a call whose conversation holds text.
func seenText(reqs []standin.Request, text string) (time.Time, bool) {
	for _, q := range reqs {
		if q.Side {
			continue
		}
		for _, h := range q.History {
			if strings.Contains(h, text) {
				return q.At, true
			}
		}
	}
	return time.Time{}, false
}
