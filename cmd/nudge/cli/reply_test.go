package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/api"
	"github.com/nudgehq/nudge/cmd/nudge/mcp"
)

// TestReplySurfaces: every way an orchestrator waits for an agent's reply, with the reply
// handed to the daemon as the agent's record reader hands it (a shell runtime has no
// record, so the test plays the reader): GET ?wait&for=reply, nudge receipt --reply,
// nudge trigger --wait-for reply, the MCP trigger tool's wait_for reply, and the reply
// event. A trigger that fails ends the wait for its reply at once.
func TestReplySurfaces(t *testing.T) {
	td := startDaemon(t, newTestConfig(t))
	rt := td.spawnShell("rw", "sh", "sh")
	reply := func(id, text string) {
		nudge.Publish(td.d.Rooms().Bus, nudge.ReplyRead{RuntimeID: rt.RuntimeID, TriggerID: id, Text: text, EndedAt: time.Now(), Evidence: "session.jsonl:7"})
	}
	// answer replies to trigger id once it is acked, as the agent's turn would end.
	answer := func(id, text string) {
		go func() {
			td.waitTrigger(id, func(tr nudge.Trigger) bool { return tr.State == nudge.StateAcked })
			reply(id, text)
		}()
	}
	if _, err := td.trigger(map[string]any{"trigger_id": "q1", "workspace": "rw", "agent": "sh", "prompt": "echo q1"}); err != nil {
		t.Fatal(err)
	}
	if got := td.waitTrigger("q1", closed); got.State != nudge.StateAcked {
		t.Fatalf("q1: %+v", got)
	}

	// Acked, no reply yet: the wait for it ends with exit 3 and nothing printed.
	if out, errOut, code := td.runCLI("receipt", "q1", "--reply", "--wait", "200ms"); code != 3 || out != "" || !strings.Contains(errOut, "receipt q1 --reply") {
		t.Errorf("receipt --reply before the reply: %d %q %q; want 3, nothing on stdout, how to wait again", code, out, errOut)
	}
	var tr nudge.Trigger
	if err := td.c.do(t0(), "GET", "/v1/triggers/q1?wait=200ms&for=reply", nil, &tr); err != nil || tr.TurnEndedAt != nil {
		t.Errorf("GET for=reply before the reply: %+v, %v", tr, err)
	}
	if err := td.c.do(t0(), "GET", "/v1/triggers/q1?wait=1s&for=answer", nil, nil); err == nil || !strings.Contains(err.Error(), "BAD_REQUEST") {
		t.Errorf("GET for=answer: %v, want BAD_REQUEST", err)
	}

	// The API's long poll and the CLI, both waiting when the reply comes.
	type cli struct {
		out, err string
		code     int
	}
	apiDone, cliDone := make(chan nudge.Trigger, 1), make(chan cli, 1)
	go func() {
		var got nudge.Trigger
		if err := td.c.do(t0(), "GET", "/v1/triggers/q1?wait=1m&for=reply", nil, &got); err != nil {
			t.Error(err)
		}
		apiDone <- got
	}()
	go func() {
		out, errOut, code := td.runCLI("receipt", "q1", "--reply", "--wait", "1m")
		cliDone <- cli{out, errOut, code}
	}()
	seq := lastSeq(t, td)
	reply("q1", "It is 42.\n\tbecause \x1b[31mred\x1b[0m")
	if got := <-apiDone; got.Reply != "It is 42.\n\tbecause \x1b[31mred\x1b[0m" || got.TurnEndedAt == nil || got.State != nudge.StateAcked {
		t.Errorf("GET for=reply: %q ended %v state %s", got.Reply, got.TurnEndedAt, got.State)
	}
	// The text alone, its escape sequences made harmless (a model wrote them).
	if c := <-cliDone; c.code != 0 || c.out != "It is 42.\n\tbecause \\x1b[31mred\\x1b[0m\n" {
		t.Errorf("receipt --reply: %d %q %q", c.code, c.out, c.err)
	}
	var ev *api.Event
	for _, e := range readEvents(t, td.api(), seq) {
		if e.Type == "reply" {
			ev = &e
			break
		}
	}
	if ev == nil || ev.Workspace != "rw" || !strings.Contains(string(ev.Detail), `"trigger_id":"q1"`) || !strings.Contains(string(ev.Detail), `"runtime_id":"`+rt.RuntimeID+`"`) {
		t.Errorf("reply event: %+v", ev)
	}
	// The first reply is kept.
	reply("q1", "a later turn")
	if got, _ := td.d.Rooms().Pipeline.Get("q1"); got.Reply != "It is 42.\n\tbecause \x1b[31mred\x1b[0m" {
		t.Errorf("a second reply replaced the first: %q", got.Reply)
	}

	// A question asked with --wait-for reply prints the receipt with its answer.
	answer("q2", "Answer two.")
	out, errOut, code := td.runCLI("trigger", "--workspace", "rw", "--agent", "sh", "--id", "q2", "--wait-for", "reply", "--wait-timeout", "1m", "echo q2")
	if code != 0 || !strings.Contains(out, `"reply": "Answer two."`) || !strings.Contains(out, `"turn_ended_at"`) {
		t.Errorf("trigger --wait-for reply: %d %s %s", code, out, errOut)
	}
	// A typo in --wait-for is refused before anything is sent.
	if _, errOut, code := td.runCLI("trigger", "--workspace", "rw", "--agent", "sh", "--id", "q-typo", "--wait-for", "replied", "echo typo"); code != 2 || !strings.Contains(errOut, "reply") {
		t.Errorf("--wait-for replied: %d %q; want a usage error", code, errOut)
	}
	if err := td.c.do(t0(), "GET", "/v1/triggers/q-typo", nil, nil); err == nil {
		t.Error("--wait-for replied sent the trigger anyway")
	}

	// The MCP trigger tool.
	cs := mcpSession(t, td, "")
	answer("q3", "Answer three.")
	var res mcp.TriggerResult
	if r := callTool(t, cs, "trigger", map[string]any{"workspace": "rw", "agent": "sh", "prompt": "echo q3", "trigger_id": "q3",
		"wait_for": "reply", "wait": "60s"}, &res); r.IsError || res.Reached == nil || !*res.Reached || res.Reply != "Answer three." {
		t.Errorf("MCP trigger wait_for reply: %s", toolText(r))
	}

	// A trigger that fails has no reply to wait for: the wait ends at once, exit 1.
	_, errOut, code = td.runCLI("trigger", "--workspace", "rw", "--agent", "nobody", "--id", "q4", "--wait-for", "reply", "--wait-timeout", "1m", "echo q4")
	if code != 1 || !strings.Contains(errOut, "UNMANAGED_RUNTIME") {
		t.Errorf("--wait-for reply on a failing trigger: %d %q", code, errOut)
	}
}

// lastSeq is the sequence number of the newest kept event.
func lastSeq(t *testing.T, td *testDaemon) uint64 {
	t.Helper()
	var seq uint64
	for _, e := range readEvents(t, td.api(), 0) {
		seq = max(seq, e.Seq)
	}
	return seq
}

// api is a client of td's API, closed when the test ends.
func (td *testDaemon) api() *api.Client {
	c := api.NewClient(td.cfg.Socket, "")
	td.t.Cleanup(func() { c.Close() })
	return c
}
