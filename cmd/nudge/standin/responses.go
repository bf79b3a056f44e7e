package standin

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// The OpenAI Responses API, as Codex speaks it with wire_api = "responses": POST
// {base_url}/responses with "stream": true, answered by response.created, the
// output items with their text deltas, and response.completed.

func init() { register(Responses, serveResponses) }

var respSeq atomic.Int64

func serveResponses(s *Server, w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/responses") {
		// Codex asks {base_url}/models for a model list; it has a built-in one.
		writeError(w, http.StatusNotFound, openAIError("not_found", "no such endpoint: "+r.URL.Path))
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	var in struct {
		Input json.RawMessage `json:"input"`
		Tools []struct {
			Type string `json:"type"`
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		writeError(w, http.StatusBadRequest, openAIError("invalid_request_error", err.Error()))
		return
	}
	req := Request{API: Responses, Body: body}
	req.Prompt, req.History, req.ToolResult = responsesTurn(in.Input)
	var tools []string
	for _, t := range in.Tools {
		tools = append(tools, t.Name)
	}
	req.Side = len(tools) == 0
	reply := s.take(req)
	if !s.delay(r, reply.Delay) {
		return
	}
	if reply.Status != 0 {
		writeError(w, reply.Status, openAIError("server_error", fmt.Sprintf("stand-in error %d", reply.Status)))
		return
	}
	streamResponse(newSSE(w), reply, tools)
}

func openAIError(typ, msg string) map[string]any {
	return map[string]any{"error": map[string]any{"type": typ, "message": msg, "code": typ}}
}

// responsesTurn reads a Responses input (a string, or a list of items): the turn's
// prompt, the user messages, and whether the last item is a tool's output.
func responsesTurn(raw json.RawMessage) (prompt string, history []string, toolResult bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, []string{s}, false
	}
	var items []struct {
		Type    string          `json:"type"`
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	json.Unmarshal(raw, &items)
	ms := make([]msg, 0, len(items))
	for _, it := range items {
		switch {
		case it.Type == "message" || it.Type == "":
			ms = append(ms, msg{role: it.Role, text: contentText(it.Content)})
		case strings.HasSuffix(it.Type, "_call"): // function_call, custom_tool_call, local_shell_call, ...
			ms = append(ms, msg{role: "assistant", toolCall: true})
		case strings.HasSuffix(it.Type, "_output"):
			ms = append(ms, msg{role: "tool"})
		default: // reasoning and the like
			ms = append(ms, msg{role: it.Type})
		}
	}
	if n := len(items); n > 0 {
		toolResult = strings.HasSuffix(items[n-1].Type, "_output")
	}
	prompt, history = turn(ms)
	return prompt, history, toolResult
}

// contentText joins the text parts of a message content: a string, or a list of
// parts each with a "text" field (input_text, text, ...).
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	json.Unmarshal(raw, &parts)
	var texts []string
	for _, p := range parts {
		if p.Text != "" && (p.Type == "" || strings.Contains(p.Type, "text")) {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// streamResponse writes reply as a Responses event stream. tools are the tool names
// the request offered; a ToolCall without a Name uses the shell tool among them.
func streamResponse(e *sse, reply Reply, tools []string) {
	n := respSeq.Add(1)
	id := fmt.Sprintf("resp_standin_%d", n)
	resp := map[string]any{"id": id, "object": "response", "created_at": time.Now().Unix(), "status": "in_progress", "model": "standin", "output": []any{}}
	e.event("response.created", map[string]any{"type": "response.created", "response": resp})
	index := 0
	if reply.Text != "" {
		msgID := fmt.Sprintf("msg_standin_%d", n)
		item := map[string]any{"id": msgID, "type": "message", "role": "assistant", "status": "in_progress", "content": []any{}}
		e.event("response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": index, "item": item})
		part := map[string]any{"type": "output_text", "text": "", "annotations": []any{}}
		e.event("response.content_part.added", map[string]any{"type": "response.content_part.added", "item_id": msgID, "output_index": index, "content_index": 0, "part": part})
		for _, d := range chunks(reply.Text) {
			e.event("response.output_text.delta", map[string]any{"type": "response.output_text.delta", "item_id": msgID, "output_index": index, "content_index": 0, "delta": d})
		}
		e.event("response.output_text.done", map[string]any{"type": "response.output_text.done", "item_id": msgID, "output_index": index, "content_index": 0, "text": reply.Text})
		part["text"] = reply.Text
		e.event("response.content_part.done", map[string]any{"type": "response.content_part.done", "item_id": msgID, "output_index": index, "content_index": 0, "part": part})
		item["status"], item["content"] = "completed", []any{part}
		e.event("response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": index, "item": item})
		index++
	}
	if reply.ToolCall != nil {
		name, args := responsesTool(reply.ToolCall, tools)
		a, _ := json.Marshal(args)
		item := map[string]any{"id": fmt.Sprintf("fc_standin_%d", n), "type": "function_call", "status": "completed", "name": name, "arguments": string(a), "call_id": fmt.Sprintf("call_standin_%d", n)}
		e.event("response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": index, "item": item})
		e.event("response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": index, "item": item})
	}
	resp["status"] = "completed"
	resp["usage"] = map[string]any{"input_tokens": 100, "input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens": 20, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": 120}
	e.event("response.completed", map[string]any{"type": "response.completed", "response": resp})
}

// responsesTool maps a ToolCall onto a tool the request offered. With a Name, the
// call is sent as it is. Without one, Args["command"] (a string) is a shell command
// for whichever of Codex's shell tools is offered, asking to run outside the sandbox
// (sandbox_permissions = "require_escalated"), which Codex puts to the operator
// under approval_policy = "on-request".
func responsesTool(tc *ToolCall, tools []string) (string, map[string]any) {
	if tc.Name != "" {
		return tc.Name, tc.Args
	}
	cmd, _ := tc.Args["command"].(string)
	has := func(n string) bool {
		for _, t := range tools {
			if t == n {
				return true
			}
		}
		return false
	}
	args := map[string]any{"sandbox_permissions": "require_escalated", "justification": "The stand-in asks to run " + cmd}
	switch {
	case has("exec_command"):
		args["cmd"] = cmd
		return "exec_command", args
	case has("shell_command"):
		args["command"] = cmd
		return "shell_command", args
	default:
		args["command"] = []string{"bash", "-lc", cmd}
		return "shell", args
	}
}
