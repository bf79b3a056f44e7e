package standin

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
)

// The Anthropic Messages API, as Claude Code speaks it with ANTHROPIC_BASE_URL:
// POST {base}/v1/messages (with or without "stream": true) and
// POST {base}/v1/messages/count_tokens.

func init() { register(Messages, serveMessages) }

var msgSeq atomic.Int64

func serveMessages(s *Server, w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/messages/count_tokens"):
		io.Copy(io.Discard, r.Body)
		writeJSON(w, http.StatusOK, map[string]any{"input_tokens": 100})
		return
	case r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/messages"):
		writeError(w, http.StatusNotFound, anthropicError("not_found_error", "no such endpoint: "+r.URL.Path))
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	var in struct {
		Model    string `json:"model"`
		Stream   bool   `json:"stream"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		writeError(w, http.StatusBadRequest, anthropicError("invalid_request_error", err.Error()))
		return
	}
	req := Request{API: Messages, Body: body, Side: len(in.Tools) == 0}
	ms := make([]msg, len(in.Messages))
	for i, m := range in.Messages {
		ms[i] = msg{role: m.Role, text: contentText(m.Content), toolCall: m.Role == "assistant" && hasBlock(m.Content, "tool_use")}
	}
	// A tool's result since the model's last message, perhaps followed by more messages
	// the CLI adds after it (newer Claude Code releases add a "system" one), ends the
	// conversation.
	for i := len(in.Messages) - 1; i >= 0 && in.Messages[i].Role != "assistant"; i-- {
		if in.Messages[i].Role == "user" && hasBlock(in.Messages[i].Content, "tool_result") {
			req.ToolResult = true
			break
		}
	}
	req.Prompt, req.History = turn(ms)
	reply := s.take(req)
	if !s.delay(r, reply.Delay) {
		return
	}
	if reply.Status != 0 {
		writeError(w, reply.Status, anthropicError("api_error", fmt.Sprintf("stand-in error %d", reply.Status)))
		return
	}
	model := in.Model
	if model == "" {
		model = "claude-standin"
	}
	if in.Stream {
		streamMessage(newSSE(w), reply, model)
		return
	}
	writeJSON(w, http.StatusOK, message(reply, model, msgSeq.Add(1)))
}

func anthropicError(typ, msg string) map[string]any {
	return map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}}
}

// hasBlock reports whether a message content holds a block of type typ.
func hasBlock(raw json.RawMessage, typ string) bool {
	var parts []struct {
		Type string `json:"type"`
	}
	json.Unmarshal(raw, &parts)
	for _, p := range parts {
		if p.Type == typ {
			return true
		}
	}
	return false
}

// messagesTool maps a ToolCall onto Claude Code's tools: without a Name, Bash with
// Args["command"].
func messagesTool(tc *ToolCall) (string, map[string]any) {
	if tc.Name != "" {
		return tc.Name, tc.Args
	}
	return "Bash", map[string]any{"command": tc.Args["command"], "description": "Run a command"}
}

func usage(out int) map[string]any {
	return map[string]any{"input_tokens": 100, "output_tokens": out, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
}

// message is reply as one non-streamed Messages response.
func message(reply Reply, model string, n int64) map[string]any {
	content := []any{}
	if reply.Text != "" {
		content = append(content, map[string]any{"type": "text", "text": reply.Text})
	}
	stop := "end_turn"
	if reply.ToolCall != nil {
		name, args := messagesTool(reply.ToolCall)
		content = append(content, map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_standin_%d", n), "name": name, "input": args})
		stop = "tool_use"
	}
	return map[string]any{"id": fmt.Sprintf("msg_standin_%d", n), "type": "message", "role": "assistant", "model": model,
		"content": content, "stop_reason": stop, "stop_sequence": nil, "usage": usage(20)}
}

// streamMessage writes reply as a Messages event stream.
func streamMessage(e *sse, reply Reply, model string) {
	n := msgSeq.Add(1)
	start := message(Reply{}, model, n)
	start["content"], start["stop_reason"], start["usage"] = []any{}, nil, usage(1)
	e.event("message_start", map[string]any{"type": "message_start", "message": start})
	e.event("ping", map[string]any{"type": "ping"})
	index := 0
	if reply.Text != "" {
		e.event("content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": map[string]any{"type": "text", "text": ""}})
		for _, d := range chunks(reply.Text) {
			e.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "text_delta", "text": d}})
		}
		e.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	stop := "end_turn"
	if reply.ToolCall != nil {
		name, args := messagesTool(reply.ToolCall)
		a, _ := json.Marshal(args)
		block := map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_standin_%d", n), "name": name, "input": map[string]any{}}
		e.event("content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": block})
		for _, d := range chunks(string(a)) {
			e.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "input_json_delta", "partial_json": d}})
		}
		e.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		stop = "tool_use"
	}
	e.event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 20}})
	e.event("message_stop", map[string]any{"type": "message_stop"})
}
