package standin

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// geminiText joins the text parts of streamed GenerateContentResponses and returns
// the function calls and the finish reason of the last one.
func geminiText(t *testing.T, evs []event) (text string, calls []map[string]any, finish any) {
	t.Helper()
	var b strings.Builder
	for _, e := range evs {
		cands, _ := e.data["candidates"].([]any)
		if len(cands) != 1 {
			t.Fatalf("candidates %v", e.data)
		}
		c := cands[0].(map[string]any)
		finish = c["finishReason"]
		for _, p := range c["content"].(map[string]any)["parts"].([]any) {
			p := p.(map[string]any)
			if s, ok := p["text"].(string); ok {
				b.WriteString(s)
			}
			if fc, ok := p["functionCall"].(map[string]any); ok {
				calls = append(calls, fc)
			}
		}
	}
	return b.String(), calls, finish
}

func geminiBody(t *testing.T, contents ...any) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"contents": contents,
		"tools": []any{map[string]any{"functionDeclarations": []any{map[string]any{"name": "run_shell_command"}, map[string]any{"name": "read_file"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestGeminiStreamsAckToolCallErrorSlow: the turn Gemini CLI streams (alt=sse) gets
// the ack in several text deltas, a run_shell_command call, and after its function
// response the ack; an API error has Google's error shape; a slow reply waits.
func TestGeminiStreamsAckToolCallErrorSlow(t *testing.T) {
	s := start(t, Gemini, Scripted(nil))
	url := s.URL + "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
	prompt := envelope("g-1", "multi\nline 日本語 🚀")
	user := map[string]any{"role": "user", "parts": []any{map[string]any{"text": "<session_context>\nsetup\n</session_context>"}, map[string]any{"text": prompt}}}
	st, evs := post(t, url, geminiBody(t, user))
	text, calls, finish := geminiText(t, evs)
	if st != 200 || len(evs) < 3 || finish != "STOP" || len(calls) != 0 || text != Ack(Request{Prompt: prompt}).Text {
		t.Fatalf("status %d, %d events, finish %v, calls %v, text %q", st, len(evs), finish, calls, text)
	}

	tool := envelope("g-2", "standin:tool=`touch approved.txt`")
	user2 := map[string]any{"role": "user", "parts": []any{map[string]any{"text": tool}}}
	_, evs = post(t, url, geminiBody(t, user, map[string]any{"role": "model", "parts": []any{map[string]any{"text": text}}}, user2))
	_, calls, _ = geminiText(t, evs)
	if len(calls) != 1 || calls[0]["name"] != "run_shell_command" || calls[0]["args"].(map[string]any)["command"] != "touch approved.txt" {
		t.Fatalf("function calls %v", calls)
	}
	resp := map[string]any{"role": "user", "parts": []any{map[string]any{"functionResponse": map[string]any{"name": "run_shell_command", "response": map[string]any{"output": ""}}}}}
	_, evs = post(t, url, geminiBody(t, user2, map[string]any{"role": "model", "parts": []any{map[string]any{"functionCall": calls[0]}}}, resp))
	if text, _, _ := geminiText(t, evs); !strings.Contains(text, "ACK_TRIGGER:g-2") {
		t.Fatalf("after the function response: %q", text)
	}

	st, evs = post(t, url, geminiBody(t, map[string]any{"role": "user", "parts": []any{map[string]any{"text": envelope("g-3", "standin:error=400")}}}))
	if e, _ := evs[0].data["error"].(map[string]any); st != 400 || e["code"] != 400.0 || e["status"] != "INVALID_ARGUMENT" {
		t.Fatalf("error reply %d %v", st, evs)
	}
	t0 := time.Now()
	post(t, url, geminiBody(t, map[string]any{"role": "user", "parts": []any{map[string]any{"text": envelope("g-4", "standin:slow=300ms")}}}))
	if time.Since(t0) < 300*time.Millisecond {
		t.Fatalf("slow reply came after %v", time.Since(t0))
	}

	reqs := s.Requests()
	if len(reqs) != 5 || reqs[0].Prompt != prompt || reqs[0].API != Gemini || reqs[0].Side || !reqs[2].ToolResult || reqs[2].Prompt != tool {
		t.Fatalf("recorded %+v", reqs)
	}
	for _, id := range []string{"g-1", "g-2", "g-3", "g-4"} {
		if n := Count(reqs, id); n != 1 {
			t.Errorf("%s counted %d times", id, n)
		}
	}
}

// TestGeminiSideCalls: generateContent without tools (a session summary) is a side
// call; one that asks for JSON of a schema (the model router, the next-speaker check)
// gets a value of that schema; countTokens is not a model call.
func TestGeminiSideCalls(t *testing.T) {
	s := start(t, Gemini, Scripted(nil))
	base := s.URL + "/v1beta/models/gemini-2.5-flash-lite:"
	in := `{"contents":[{"role":"user","parts":[{"text":"Summarize: [BRIDGE_TRIGGER id=s-1] x"}]}]}`
	st, evs := post(t, base+"generateContent", in)
	if st != 200 || evs[0].name != "json" {
		t.Fatalf("summary %d %v", st, evs)
	}
	if text, _, finish := geminiText(t, []event{evs[0]}); text == "" || strings.Contains(text, "ACK") || finish != "STOP" {
		t.Fatalf("summary text %q finish %v", text, finish)
	}
	schema := `{"contents":[{"role":"user","parts":[{"text":"route"}]}],"generationConfig":{"responseMimeType":"application/json","responseJsonSchema":` +
		`{"type":"OBJECT","properties":{"complexity_reasoning":{"type":"STRING"},"complexity_score":{"type":"INTEGER"},"next_speaker":{"type":"string","enum":["user","model"]}}}}}`
	_, evs = post(t, base+"generateContent", schema)
	text, _, _ := geminiText(t, []event{evs[0]})
	var v map[string]any
	if err := json.Unmarshal([]byte(text), &v); err != nil || v["complexity_reasoning"] != "stand-in" || v["complexity_score"] != 1.0 || v["next_speaker"] != "user" {
		t.Fatalf("schema answer %q: %v", text, err)
	}
	if st, evs := post(t, base+"countTokens", in); st != 200 || evs[0].data["totalTokens"] == nil {
		t.Fatalf("countTokens %d %v", st, evs)
	}
	if st, _ := post(t, s.URL+"/v1beta/models/x:embedContent", in); st != 404 {
		t.Fatalf("unknown method: %d", st)
	}
	reqs := s.Requests()
	if len(reqs) != 2 || !reqs[0].Side || !reqs[1].Side || Count(reqs, "s-1") != 0 {
		t.Fatalf("recorded %+v", reqs)
	}
}
