package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
)

// eventTap collects an /v1/events stream.
type eventTap struct {
	mu    sync.Mutex
	lines []string
}

func tapEvents(t *testing.T, c *client) *eventTap {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	resp, err := c.send(ctx, "GET", "/v1/events", nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		cancel()
		t.Fatalf("events: %v %v", resp, err)
	}
	tap := &eventTap{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			tap.mu.Lock()
			tap.lines = append(tap.lines, sc.Text())
			tap.mu.Unlock()
		}
	}()
	t.Cleanup(func() { cancel(); resp.Body.Close(); <-done })
	return tap
}

func (e *eventTap) text() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return strings.Join(e.lines, "\n")
}

// rawGet returns a request's status and body.
func rawGet(t *testing.T, c *client, method, path string) (int, string) {
	t.Helper()
	resp, err := c.send(context.Background(), method, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// A token scoped to one workspace (and a runtime's own token) sees only its workspaces'
// events, audit records and receipts; an id in another workspace answers exactly as an
// unknown id.
func TestEventsAndLookupsScoped(t *testing.T) {
	td := startDaemon(t, newTestConfig(t))
	rt1, _ := rawCat(t, td, "w1", "rev")
	rawCat(t, td, "w2", "rev")
	scoped := td.as(td.issue(t, "--subject", "orch", "--workspace", "w1", "--verbs", "trigger,ack", "--ttl", "1h"))
	runtimeTok := procEnv(t, rt1.PID)["NUDGE_RUNTIME_TOKEN"]
	if runtimeTok == "" {
		t.Fatal("no runtime token in the pane")
	}
	asRuntime := td.as(runtimeTok)
	all, one, own := tapEvents(t, td.c), tapEvents(t, scoped), tapEvents(t, asRuntime)

	if _, err := td.trigger(map[string]any{"trigger_id": "w2-secret", "workspace": "w2", "agent": "rev", "prompt": "PROMPT-OF-W2"}); err != nil {
		t.Fatal(err)
	}
	if _, err := td.trigger(map[string]any{"trigger_id": "w1-open", "workspace": "w1", "agent": "rev", "prompt": "PROMPT-OF-W1"}); err != nil {
		t.Fatal(err)
	}
	td.waitTrigger("w2-secret", func(tr nudge.Trigger) bool { return tr.State == "submitted" || tr.Closed })
	td.waitTrigger("w1-open", func(tr nudge.Trigger) bool { return tr.State == "submitted" || tr.Closed })
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) && !(strings.Contains(one.text(), "PROMPT-OF-W1") && strings.Contains(own.text(), "PROMPT-OF-W1") &&
		strings.Contains(all.text(), "PROMPT-OF-W2")) {
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(all.text(), "PROMPT-OF-W2") || !strings.Contains(one.text(), "PROMPT-OF-W1") || !strings.Contains(own.text(), "PROMPT-OF-W1") {
		t.Fatalf("streams never showed what they may see:\nall:\n%s\nscoped:\n%s\nruntime:\n%s", all.text(), one.text(), own.text())
	}
	for name, tap := range map[string]*eventTap{"workspace token": one, "runtime token": own} {
		if s := tap.text(); strings.Contains(s, "w2") {
			t.Errorf("%s saw another workspace's events:\n%s", name, s)
		}
	}

	// Lookups outside the scope answer as an unknown id: same status, same body.
	for name, c := range map[string]*client{"workspace token": scoped, "runtime token": asRuntime} {
		for _, q := range []struct{ method, known, unknown, id, none string }{
			{"GET", "/v1/triggers/w2-secret", "/v1/triggers/w2-nosuch", "w2-secret", "w2-nosuch"},
			{"POST", "/v1/triggers/w2-secret/ack", "/v1/triggers/w2-nosuch/ack", "w2-secret", "w2-nosuch"},
			{"GET", "/v1/runtimes/rt_w2.rev", "/v1/runtimes/rt_w2.nos", "rt_w2.rev", "rt_w2.nos"},
		} {
			s1, b1 := rawGet(t, c, q.method, q.known)
			s2, b2 := rawGet(t, c, q.method, q.unknown)
			if s1 != s2 || strings.ReplaceAll(b1, q.id, q.none) != b2 || s1/100 == 2 {
				t.Errorf("%s %s %s: %d %s; unknown id: %d %s", name, q.method, q.known, s1, b1, s2, b2)
			}
		}
	}
	// The audit: nothing of w2, whatever the record names.
	scoped.do(bg(), "POST", "/v1/runtimes/rt_w2.rev/stop", nil, nil) //nolint:errcheck // refused: audited
	var recs []nudge.AuditRecord
	if err := scoped.do(bg(), "GET", "/v1/audit", nil, &recs); err != nil {
		t.Fatal(err)
	}
	seen1 := false
	for _, r := range recs {
		if r.Workspace == "w2" || strings.Contains(r.RuntimeID, "w2") || strings.Contains(r.TriggerID, "w2") || strings.Contains(r.Reason, "w2") {
			t.Errorf("scoped audit shows %+v", r)
		}
		seen1 = seen1 || r.TriggerID == "w1-open"
	}
	if !seen1 {
		t.Errorf("scoped audit lacks its own workspace's records: %+v", recs)
	}
}

// A trigger body with a duplicate or case-folded field is a 400 naming the field.
func TestTriggerBodyFieldNames(t *testing.T) {
	td := startDaemon(t, newTestConfig(t))
	for body, want := range map[string]string{
		`{"trigger_id":"d1","workspace":"w","agent":"a","prompt":"safe","prompt":"other"}`: `\"prompt\" is given twice`,
		`{"trigger_id":"d2","workspace":"w","agent":"a","Prompt":"x"}`:                     `\"Prompt\": field names are case-sensitive`,
	} {
		resp, err := td.c.send(bg(), "POST", "/v1/triggers", json.RawMessage(body)) // sent as it is: duplicates kept
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), want) {
			t.Errorf("%s: %d %s", body, resp.StatusCode, b)
		}
	}
}
