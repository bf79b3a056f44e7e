package standin

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// chatStream joins a chat-completions stream: its text, its tool call (name and
// arguments), its finish reason, whether it carried the usage and ended in [DONE].
type chatStream struct {
	text, tool, args, finish string
	usage                    bool
}

func readChat(t *testing.T, evs []event) chatStream {
	t.Helper()
	var c chatStream
	var text, args strings.Builder
	for _, e := range evs {
		if e.data["object"] != "chat.completion.chunk" {
			t.Fatalf("event %v", e.data)
		}
		if e.data["usage"] != nil {
			c.usage = true
		}
		for _, ch := range e.data["choices"].([]any) {
			ch := ch.(map[string]any)
			if f, ok := ch["finish_reason"].(string); ok {
				c.finish = f
			}
			d := ch["delta"].(map[string]any)
			if s, ok := d["content"].(string); ok {
				text.WriteString(s)
			}
			for _, tc := range asList(d["tool_calls"]) {
				f := tc.(map[string]any)["function"].(map[string]any)
				if n, ok := f["name"].(string); ok {
					c.tool = n
				}
				args.WriteString(f["arguments"].(string))
			}
		}
	}
	c.text, c.args = text.String(), args.String()
	return c
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// postChat is post for a chat-completions stream, which ends in "data: [DONE]" (not
// JSON): it returns the status, the chunks (or the JSON body as one event) and
// whether the stream ended in [DONE].
func postChat(t *testing.T, url, body string) (int, []event, bool) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		var v map[string]any
		json.NewDecoder(resp.Body).Decode(&v)
		return resp.StatusCode, []event{{"json", v}}, false
	}
	var evs []event
	done := false
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		switch {
		case !ok:
		case done:
			t.Fatalf("data after [DONE]: %q", line)
		case line == "[DONE]":
			done = true
		default:
			var v map[string]any
			if err := json.Unmarshal([]byte(line), &v); err != nil {
				t.Fatalf("data %q: %v", line, err)
			}
			evs = append(evs, event{"", v})
		}
	}
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, evs, done
}

func chatBody(t *testing.T, stream bool, messages ...any) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"model": "standin-model", "stream": stream, "stream_options": map[string]any{"include_usage": true},
		"tools":    []any{map[string]any{"type": "function", "function": map[string]any{"name": "read"}}, map[string]any{"type": "function", "function": map[string]any{"name": "bash"}}},
		"messages": messages})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestChatStreamsAckToolCallErrorSlow: OpenCode's and Pi's streamed turn gets the
// ack in several content deltas, the usage and [DONE]; a bash tool call streamed in
// argument deltas, then after the tool's message the ack; an OpenAI-shaped error; a
// slow reply waits. Prompts given as a string (OpenCode) or as parts (Pi) are read.
func TestChatStreamsAckToolCallErrorSlow(t *testing.T) {
	s := start(t, Chat, Scripted(nil))
	url := s.URL + "/v1/chat/completions"
	prompt := envelope("c-1", "multi\nline 日本語 🚀 \"quoted\" $HOME;")
	sys := map[string]any{"role": "system", "content": "You are a stand-in's client."}
	user := map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": prompt}}}
	st, evs, done := postChat(t, url, chatBody(t, true, sys, user))
	c := readChat(t, evs)
	if st != 200 || !done || len(evs) < 4 || c.text != Ack(Request{Prompt: prompt}).Text || c.finish != "stop" || !c.usage || c.tool != "" {
		t.Fatalf("status %d, %d events: %+v", st, len(evs), c)
	}

	tool := envelope("c-2", "standin:tool=`touch approved.txt`")
	user2 := map[string]any{"role": "user", "content": tool}
	_, evs, _ = postChat(t, url, chatBody(t, true, sys, user, map[string]any{"role": "assistant", "content": c.text}, user2))
	c = readChat(t, evs)
	if c.tool != "bash" || c.args != `{"command":"touch approved.txt"}` || c.finish != "tool_calls" {
		t.Fatalf("tool call %+v", c)
	}
	call := map[string]any{"role": "assistant", "content": "", "tool_calls": []any{map[string]any{"id": "call_1", "type": "function", "function": map[string]any{"name": "bash", "arguments": c.args}}}}
	_, evs, _ = postChat(t, url, chatBody(t, true, sys, user2, call, map[string]any{"role": "tool", "tool_call_id": "call_1", "content": ""}))
	if c := readChat(t, evs); !strings.Contains(c.text, "ACK_TRIGGER:c-2") {
		t.Fatalf("after the tool: %+v", c)
	}

	st, evs, _ = postChat(t, url, chatBody(t, true, map[string]any{"role": "user", "content": envelope("c-3", "standin:error=400")}))
	if e, _ := evs[0].data["error"].(map[string]any); st != 400 || e["message"] == nil {
		t.Fatalf("error reply %d %v", st, evs)
	}
	t0 := time.Now()
	postChat(t, url, chatBody(t, true, map[string]any{"role": "user", "content": envelope("c-4", "standin:slow=300ms")}))
	if time.Since(t0) < 300*time.Millisecond {
		t.Fatalf("slow reply came after %v", time.Since(t0))
	}

	reqs := s.Requests()
	if len(reqs) != 5 || reqs[0].Prompt != prompt || reqs[0].API != Chat || reqs[0].Side || !reqs[2].ToolResult || reqs[2].Prompt != tool {
		t.Fatalf("recorded %+v", reqs)
	}
	for _, id := range []string{"c-1", "c-2", "c-3", "c-4"} {
		if n := Count(reqs, id); n != 1 {
			t.Errorf("%s counted %d times", id, n)
		}
	}
}

// TestChatSideCallsNonStreamAndModels: a call without tools (OpenCode's session
// title) is a side call answered without an ack; a non-streamed call gets one
// chat.completion; GET /models lists the stand-in's model.
func TestChatSideCallsNonStreamAndModels(t *testing.T) {
	s := start(t, Chat, Scripted(nil))
	url := s.URL + "/v1/chat/completions"
	title, _ := json.Marshal(map[string]any{"stream": true, "messages": []any{
		map[string]any{"role": "system", "content": "You are a title generator."},
		map[string]any{"role": "user", "content": envelope("t-1", "x")}}})
	_, evs, _ := postChat(t, url, string(title))
	if c := readChat(t, evs); c.text == "" || strings.Contains(c.text, "ACK") {
		t.Fatalf("title %+v", c)
	}
	st, evs, _ := postChat(t, url, chatBody(t, false, map[string]any{"role": "user", "content": envelope("t-2", "standin:tool=`ls`")}))
	msg := evs[0].data["choices"].([]any)[0].(map[string]any)
	if st != 200 || evs[0].data["object"] != "chat.completion" || msg["finish_reason"] != "tool_calls" {
		t.Fatalf("non-streamed %d %v", st, evs[0].data)
	}
	resp, err := http.Get(s.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	var models struct {
		Data []struct{ ID string } `json:"data"`
	}
	json.NewDecoder(resp.Body).Decode(&models)
	resp.Body.Close()
	if len(models.Data) != 1 || models.Data[0].ID != chatModel {
		t.Fatalf("models %+v", models)
	}
	reqs := s.Requests()
	if len(reqs) != 2 || !reqs[0].Side || reqs[1].Side || Count(reqs, "t-1") != 0 || Count(reqs, "t-2") != 1 {
		t.Fatalf("recorded %+v", reqs)
	}
}
