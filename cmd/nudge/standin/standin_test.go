package standin

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/nudgehq/nudge/inject"
)

// event is one server-sent event.
type event struct {
	name string
	data map[string]any
}

// post sends body to url and returns the status and the events (or the JSON body as
// one event named "json").
func post(t *testing.T, url, body string) (int, []event) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		var v map[string]any
		json.NewDecoder(resp.Body).Decode(&v)
		return resp.StatusCode, []event{{"json", v}}
	}
	var evs []event
	var name string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			var v map[string]any
			if err := json.Unmarshal([]byte(line[len("data: "):]), &v); err != nil {
				t.Fatalf("data %q: %v", line, err)
			}
			evs = append(evs, event{name, v})
		}
	}
	return resp.StatusCode, evs
}

func start(t *testing.T, api API, script Script) *Server {
	t.Helper()
	s, err := Start(api, script)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if !strings.HasPrefix(s.URL, "http://127.0.0.1:") {
		t.Fatalf("URL %q is not loopback", s.URL)
	}
	return s
}

func envelope(id, body string) string {
	return inject.Envelope{ID: id, Reason: "test", AckHint: true}.Wrap(body)
}

func TestResponsesStreamsAckAndRecords(t *testing.T) {
	s := start(t, Responses, nil)
	prompt := envelope("t-1", "line one\nline two: 日本語 🚀")
	in, _ := json.Marshal(map[string]any{"model": "m", "stream": true, "tools": []any{map[string]any{"type": "function", "name": "shell"}},
		"input": []any{
			map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": "<environment_context/>"}}},
			map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": prompt}}},
		}})
	st, evs := post(t, s.URL+"/v1/responses", string(in))
	if st != 200 {
		t.Fatalf("status %d", st)
	}
	var text strings.Builder
	deltas := 0
	for _, e := range evs {
		if e.name != e.data["type"] {
			t.Errorf("event %q carries type %v", e.name, e.data["type"])
		}
		if e.name == "response.output_text.delta" {
			text.WriteString(e.data["delta"].(string))
			deltas++
		}
	}
	if evs[0].name != "response.created" || evs[len(evs)-1].name != "response.completed" {
		t.Fatalf("events %v", evs)
	}
	if want := Ack(Request{Prompt: prompt}).Text; text.String() != want || deltas < 2 {
		t.Fatalf("deltas %d, text %q, want %q", deltas, text.String(), want)
	}
	if !strings.Contains(text.String(), "ACK_TRIGGER:t-1") {
		t.Fatalf("no ack in %q", text.String())
	}
	reqs := s.Requests()
	if len(reqs) != 1 || !strings.HasSuffix(reqs[0].Prompt, "\n"+prompt) || len(reqs[0].History) != 2 || reqs[0].ToolResult || reqs[0].Side || reqs[0].API != Responses || reqs[0].At.IsZero() {
		t.Fatalf("recorded %q", prompts(reqs))
	}
	if Count(reqs, "t-1") != 1 {
		t.Fatalf("count %d", Count(reqs, "t-1"))
	}
}

func TestResponsesToolCallAndResult(t *testing.T) {
	s := start(t, Responses, Scripted(nil))
	prompt := envelope("t-2", "do it standin:tool=`touch approved.txt`")
	in, _ := json.Marshal(map[string]any{"stream": true, "tools": []any{map[string]any{"type": "function", "name": "shell_command"}},
		"input": []any{map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": prompt}}}}})
	_, evs := post(t, s.URL+"/responses", string(in))
	var call map[string]any
	for _, e := range evs {
		if it, _ := e.data["item"].(map[string]any); e.name == "response.output_item.done" && it["type"] == "function_call" {
			call = it
		}
	}
	if call == nil || call["name"] != "shell_command" || !strings.Contains(call["arguments"].(string), `"command":"touch approved.txt"`) || call["call_id"] == "" {
		t.Fatalf("tool call %v", call)
	}
	in, _ = json.Marshal(map[string]any{"stream": true, "tools": []any{map[string]any{"type": "function", "name": "shell_command"}},
		"input": []any{
			map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": prompt}}},
			call,
			map[string]any{"type": "function_call_output", "call_id": call["call_id"], "output": "ok"},
		}})
	_, evs = post(t, s.URL+"/responses", string(in))
	var text string
	for _, e := range evs {
		if e.name == "response.output_text.done" {
			text = e.data["text"].(string)
		}
	}
	if !strings.Contains(text, "ACK_TRIGGER:t-2") {
		t.Fatalf("after the tool result: %q", text)
	}
	reqs := s.Requests()
	if len(reqs) != 2 || !reqs[1].ToolResult || reqs[1].Prompt != prompt || Count(reqs, "t-2") != 1 {
		t.Fatalf("recorded %q", prompts(reqs))
	}
}

func TestMessagesStreamNonStreamAndSideCalls(t *testing.T) {
	s := start(t, Messages, Scripted(nil))
	prompt := envelope("c-1", "hello standin:long=3")
	in, _ := json.Marshal(map[string]any{"model": "claude-x", "stream": true, "tools": []any{map[string]any{"name": "Bash"}},
		"messages": []any{map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "text", "text": prompt},
			map[string]any{"type": "text", "text": "<system-reminder>x</system-reminder>"},
		}}}})
	_, evs := post(t, s.URL+"/v1/messages?beta=true", string(in))
	var text strings.Builder
	for _, e := range evs {
		if e.name == "content_block_delta" {
			text.WriteString(e.data["delta"].(map[string]any)["text"].(string))
		}
	}
	names := []string{evs[0].name, evs[len(evs)-2].name, evs[len(evs)-1].name}
	if names[0] != "message_start" || names[1] != "message_delta" || names[2] != "message_stop" {
		t.Fatalf("events %v", names)
	}
	if !strings.Contains(text.String(), "Line 3 of") || !strings.HasSuffix(text.String(), "ACK_TRIGGER:c-1") {
		t.Fatalf("text %q", text.String())
	}
	// A side call (no tools, not streamed) gets a plain message and no ack.
	side, _ := json.Marshal(map[string]any{"model": "haiku", "messages": []any{map[string]any{"role": "user", "content": prompt}}})
	st, evs := post(t, s.URL+"/v1/messages", string(side))
	if st != 200 || evs[0].name != "json" || evs[0].data["type"] != "message" || strings.Contains(evs[0].data["content"].([]any)[0].(map[string]any)["text"].(string), "ACK") {
		t.Fatalf("side call: %d %v", st, evs)
	}
	// Token counts are not model calls.
	if st, _ := post(t, s.URL+"/v1/messages/count_tokens", string(side)); st != 200 {
		t.Fatalf("count_tokens %d", st)
	}
	reqs := s.Requests()
	if len(reqs) != 2 || reqs[0].Side || !reqs[1].Side || Count(reqs, "c-1") != 1 {
		t.Fatalf("recorded %q", prompts(reqs))
	}
}

func TestMessagesToolUseErrorAndSlow(t *testing.T) {
	s := start(t, Messages, Scripted(nil))
	tools := []any{map[string]any{"name": "Bash"}}
	prompt := envelope("c-2", "standin:tool=`rm -rf build`")
	in, _ := json.Marshal(map[string]any{"stream": true, "tools": tools, "messages": []any{map[string]any{"role": "user", "content": prompt}}})
	_, evs := post(t, s.URL+"/v1/messages", string(in))
	var input strings.Builder
	var stop any
	for _, e := range evs {
		if d, _ := e.data["delta"].(map[string]any); e.name == "content_block_delta" && d["type"] == "input_json_delta" {
			input.WriteString(d["partial_json"].(string))
		}
		if e.name == "message_delta" {
			stop = e.data["delta"].(map[string]any)["stop_reason"]
		}
	}
	var args map[string]any
	if err := json.Unmarshal([]byte(input.String()), &args); err != nil || args["command"] != "rm -rf build" || stop != "tool_use" {
		t.Fatalf("tool input %q (%v), stop %v", input.String(), err, stop)
	}
	// The tool's result comes back: the prompt is still the turn's, and it is acked.
	in, _ = json.Marshal(map[string]any{"stream": false, "tools": tools, "messages": []any{
		map[string]any{"role": "user", "content": prompt},
		map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "x", "name": "Bash", "input": args}}},
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "x", "content": "ok"}, map[string]any{"type": "text", "text": "<system-reminder/>"}}},
	}})
	_, evs = post(t, s.URL+"/v1/messages", string(in))
	if c := evs[0].data["content"].([]any); !strings.Contains(c[0].(map[string]any)["text"].(string), "ACK_TRIGGER:c-2") {
		t.Fatalf("after the tool: %v", evs[0].data)
	}
	// An API error.
	in, _ = json.Marshal(map[string]any{"stream": true, "tools": tools, "messages": []any{map[string]any{"role": "user", "content": envelope("c-3", "standin:error=400")}}})
	if st, evs := post(t, s.URL+"/v1/messages", string(in)); st != 400 || evs[0].data["type"] != "error" {
		t.Fatalf("error reply %d %v", st, evs)
	}
	// A slow reply waits before its first byte.
	in, _ = json.Marshal(map[string]any{"stream": true, "tools": tools, "messages": []any{map[string]any{"role": "user", "content": envelope("c-4", "standin:slow=300ms")}}})
	t0 := time.Now()
	post(t, s.URL+"/v1/messages", string(in))
	if time.Since(t0) < 300*time.Millisecond {
		t.Fatalf("slow reply came after %v", time.Since(t0))
	}
	reqs := s.Requests()
	if len(reqs) != 4 || reqs[0].ToolResult || !reqs[1].ToolResult || reqs[1].Prompt != prompt+"\n<system-reminder/>" {
		t.Fatalf("recorded %q", prompts(reqs))
	}
}

// TestCloseEndsSlowReplies: Close does not wait for a scripted delay.
func TestCloseEndsSlowReplies(t *testing.T) {
	s, err := Start(Messages, func(Request) Reply { return Reply{Delay: time.Hour} })
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		resp, err := http.Post(s.URL+"/v1/messages", "application/json", strings.NewReader(`{"messages":[]}`))
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	for len(s.Requests()) == 0 {
		time.Sleep(time.Millisecond)
	}
	t0 := time.Now()
	s.Close()
	<-done
	if time.Since(t0) > 5*time.Second {
		t.Fatalf("Close took %v", time.Since(t0))
	}
	s.Close() // idempotent
}

func TestStartUnknownAPI(t *testing.T) {
	if _, err := Start("nope", nil); !errors.Is(err, ErrUnknownAPI) {
		t.Fatalf("err %v", err)
	}
}

func TestEnvelopeIDsAndAck(t *testing.T) {
	for i, tt := range []struct {
		prompt string
		want   string
	}{
		{envelope("abc", "one line"), "ACK_TRIGGER:abc"},
		{envelope("x.y:z@w/1-2", "multi\nline"), "ACK_TRIGGER:x.y:z@w/1-2"},
		{envelope("a", "x") + "\n" + envelope("b", "y"), "ACK_TRIGGER:a\nACK_TRIGGER:b"},
		{"no envelope", ""},
		// The hint names the id but never as a marker: only the header counts.
		{"ACK_TRIGGER:forged [BRIDGE_TRIGGER id=real thread=- reason=-] x [/BRIDGE_TRIGGER]", "ACK_TRIGGER:real"},
	} {
		if got := AckLines(tt.prompt); got != tt.want {
			t.Errorf("#%d: got %q, want %q", i, got, tt.want)
		}
	}
}

func TestChunks(t *testing.T) {
	text := strings.Repeat("日本語🚀 ACK_TRIGGER:id-1 ", 20)
	var b strings.Builder
	for _, c := range chunks(text) {
		if len(c) > deltaSize || !utf8.ValidString(c) {
			t.Fatalf("chunk %q", c)
		}
		b.WriteString(c)
	}
	if b.String() != text {
		t.Fatal("chunks do not join to the text")
	}
	if chunks("") != nil {
		t.Fatal("empty text gave deltas")
	}
}

func prompts(reqs []Request) []string {
	var out []string
	for _, r := range reqs {
		out = append(out, fmt.Sprintf("prompt %q tool=%v side=%v history=%q", r.Prompt, r.ToolResult, r.Side, r.History))
	}
	return out
}

// TestTurn: the turn's prompt is every user text since the model last ended a turn.
func TestTurn(t *testing.T) {
	u := func(s string) msg { return msg{role: "user", text: s} }
	a := func(s string) msg { return msg{role: "assistant", text: s} }
	call := msg{role: "assistant", toolCall: true}
	out := msg{role: "tool"}
	for i, tt := range []struct {
		ms     []msg
		prompt string
	}{
		{[]msg{{role: "developer", text: "sys"}, u("env"), u("p1")}, "env\np1"},
		{[]msg{u("p1"), a("r1"), u("p2")}, "p2"},
		// Two prompts typed before the model answered: one turn, both.
		{[]msg{u("p1"), a("r1"), u("p2"), u("p3")}, "p2\np3"},
		// A tool's result belongs to the turn that asked for it.
		{[]msg{u("p1"), a("r1"), u("p2"), a("let me run it"), call, out}, "p2"},
		{[]msg{u("p1"), a("r1"), u("p2"), call, out, u("queued")}, "p2\nqueued"},
		{nil, ""},
	} {
		got, hist := turn(tt.ms)
		if got != tt.prompt {
			t.Errorf("#%d: got %q, want %q", i, got, tt.prompt)
		}
		n := 0
		for _, m := range tt.ms {
			if m.role == "user" {
				n++
			}
		}
		if len(hist) != n {
			t.Errorf("#%d: history %q", i, hist)
		}
	}
}

// TestCountSeesARetypedPrompt: a CLI resending its pending turn is one delivery; the
// same prompt typed twice into the conversation is two.
func TestCountSeesARetypedPrompt(t *testing.T) {
	p1, p2 := envelope("a", "x"), envelope("b", "y")
	resent := []Request{{History: []string{p1}}, {History: []string{p1, p2}}}
	if Count(resent, "a") != 1 || Count(resent, "b") != 1 {
		t.Fatalf("resent turn counted %d, %d", Count(resent, "a"), Count(resent, "b"))
	}
	retyped := []Request{{History: []string{p1}}, {History: []string{p1, "ACK", p1}}}
	if Count(retyped, "a") != 2 {
		t.Fatalf("retyped prompt counted %d", Count(retyped, "a"))
	}
	if Count([]Request{{Side: true, History: []string{p1, p1}}}, "a") != 0 {
		t.Fatal("a side call counted")
	}
}
