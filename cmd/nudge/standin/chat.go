package standin

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"
)

// The OpenAI chat-completions API, as OpenCode (an @ai-sdk/openai-compatible
// provider) and Pi (an "openai-completions" model) speak it: POST
// {baseURL}/chat/completions with "stream": true, answered by chat.completion.chunk
// events (a role, content deltas, tool-call deltas, a finish reason, the usage when
// stream_options.include_usage asks for it) and "data: [DONE]". GET {baseURL}/models
// lists one model.

func init() { register(Chat, serveChat) }

var chatSeq atomic.Int64

// chatModel is the model id the stand-in lists.
const chatModel = "standin-model"

func serveChat(s *Server, w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/models"):
		writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{
			map[string]any{"id": chatModel, "object": "model", "created": 0, "owned_by": "standin"}}})
		return
	case r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions"):
		writeError(w, http.StatusNotFound, openAIError("not_found", "no such endpoint: "+r.URL.Path))
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	var in struct {
		Model         string `json:"model"`
		Stream        bool   `json:"stream"`
		StreamOptions struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
		Messages []struct {
			Role      string          `json:"role"`
			Content   json.RawMessage `json:"content"`
			ToolCalls []any           `json:"tool_calls"`
		} `json:"messages"`
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		writeError(w, http.StatusBadRequest, openAIError("invalid_request_error", err.Error()))
		return
	}
	var tools []string
	for _, t := range in.Tools {
		tools = append(tools, t.Function.Name)
	}
	req := Request{API: Chat, Body: body, Side: len(tools) == 0}
	ms := make([]msg, len(in.Messages))
	for i, m := range in.Messages {
		ms[i] = msg{role: m.Role, text: contentText(m.Content), toolCall: m.Role == "assistant" && len(m.ToolCalls) > 0}
		if m.Role == "tool" {
			ms[i].text = ""
		}
	}
	req.ToolResult = len(ms) > 0 && ms[len(ms)-1].role == "tool"
	req.Prompt, req.History = turn(ms)
	reply := s.take(req)
	if !s.delay(r, reply.Delay) {
		return
	}
	if reply.Status != 0 {
		writeError(w, reply.Status, openAIError("server_error", fmt.Sprintf("stand-in error %d", reply.Status)))
		return
	}
	model := in.Model
	if model == "" {
		model = chatModel
	}
	n := chatSeq.Add(1)
	if !in.Stream {
		writeJSON(w, http.StatusOK, chatCompletion(reply, model, tools, n))
		return
	}
	streamChat(newSSE(w), reply, model, tools, n, in.StreamOptions.IncludeUsage)
}

// chatTool maps a ToolCall onto the request's tools: without a Name, the shell tool
// among them (OpenCode's and Pi's "bash") with Args["command"].
func chatTool(tc *ToolCall, tools []string) (string, string) {
	name := tc.Name
	if name == "" {
		name = "bash"
		for _, t := range tools {
			if t == "bash" || t == "shell" || t == "run_shell_command" {
				name = t
				break
			}
		}
	}
	a, _ := json.Marshal(tc.Args)
	return name, string(a)
}

func chatUsage() map[string]any {
	return map[string]any{"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
}

// chatCompletion is reply as one non-streamed chat.completion.
func chatCompletion(reply Reply, model string, tools []string, n int64) map[string]any {
	msg := map[string]any{"role": "assistant", "content": reply.Text}
	finish := "stop"
	if reply.ToolCall != nil {
		name, args := chatTool(reply.ToolCall, tools)
		msg["tool_calls"] = []any{map[string]any{"id": fmt.Sprintf("call_standin_%d", n), "type": "function",
			"function": map[string]any{"name": name, "arguments": args}}}
		finish = "tool_calls"
	}
	return map[string]any{"id": fmt.Sprintf("chatcmpl-standin-%d", n), "object": "chat.completion", "created": time.Now().Unix(),
		"model": model, "choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": chatUsage()}
}

// streamChat writes reply as a chat-completions event stream.
func streamChat(e *sse, reply Reply, model string, tools []string, n int64, usage bool) {
	id, created := fmt.Sprintf("chatcmpl-standin-%d", n), time.Now().Unix()
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	e.data(chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	for _, d := range chunks(reply.Text) {
		e.data(chunk(map[string]any{"content": d}, nil))
	}
	finish := "stop"
	if reply.ToolCall != nil {
		name, args := chatTool(reply.ToolCall, tools)
		call := map[string]any{"index": 0, "id": fmt.Sprintf("call_standin_%d", n), "type": "function",
			"function": map[string]any{"name": name, "arguments": ""}}
		e.data(chunk(map[string]any{"tool_calls": []any{call}}, nil))
		for _, d := range chunks(args) {
			e.data(chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": d}}}}, nil))
		}
		finish = "tool_calls"
	}
	e.data(chunk(map[string]any{}, finish))
	if usage {
		e.data(map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
			"choices": []any{}, "usage": chatUsage()})
	}
	e.raw("[DONE]")
}

func init() {
	Agents["opencode"] = AgentSetup{Chat, setupOpenCode}
	Agents["pi"] = AgentSetup{Chat, setupPi}
}

// setupOpenCode defines an OpenAI-compatible provider for the stand-in in
// ~/.config/opencode/opencode.json and makes its model the default (also for the
// session title), asks before bash and edits (an approval dialog), and turns off the
// auto-update, sharing, the models.dev fetch and LSP downloads. OpenCode installs
// @opencode-ai/plugin into its config folder at start unless a lockfile there already
// names it: an empty node_modules and such a lockfile keep it off the npm registry.
func setupOpenCode(home, root, url string) ([]string, error) {
	dir := filepath.Join(home, ".config", "opencode")
	if err := os.MkdirAll(filepath.Join(dir, "node_modules"), 0o700); err != nil {
		return nil, err
	}
	lock := map[string]any{"packages": map[string]any{"": map[string]any{"dependencies": map[string]any{"@opencode-ai/plugin": "*"}}}}
	if err := writeJSONFile(filepath.Join(dir, "package-lock.json"), lock); err != nil {
		return nil, err
	}
	conf := map[string]any{
		"$schema": "https://opencode.ai/config.json",
		"provider": map[string]any{"standin": map[string]any{
			"npm":     "@ai-sdk/openai-compatible",
			"name":    "Stand-in",
			"options": map[string]any{"baseURL": url + "/v1", "apiKey": DummyKey},
			"models":  map[string]any{chatModel: map[string]any{"name": "Stand-in"}},
		}},
		"model":       "standin/" + chatModel,
		"small_model": "standin/" + chatModel,
		"autoupdate":  false,
		"share":       "disabled",
		"permission":  map[string]any{"bash": "ask", "edit": "ask"},
	}
	if err := writeJSONFile(filepath.Join(dir, "opencode.json"), conf); err != nil {
		return nil, err
	}
	return []string{
		"OPENCODE_DISABLE_AUTOUPDATE=1",
		"OPENCODE_DISABLE_MODELS_FETCH=1",
		"OPENCODE_DISABLE_SHARE=1",
		"OPENCODE_DISABLE_LSP_DOWNLOAD=1",
	}, nil
}

// setupPi defines a provider for the stand-in (the "openai-completions" API) in
// ~/.pi/agent/models.json and makes its model the default in settings.json, and
// turns off every startup network call: the version check, the install ping and the
// download of fd and ripgrep (PI_OFFLINE).
func setupPi(home, root, url string) ([]string, error) {
	dir := filepath.Join(home, ".pi", "agent")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	models := map[string]any{"providers": map[string]any{"standin": map[string]any{
		"baseUrl": url + "/v1",
		"api":     "openai-completions",
		"apiKey":  DummyKey,
		"compat":  map[string]any{"supportsDeveloperRole": false, "supportsReasoningEffort": false},
		"models": []any{map[string]any{"id": chatModel, "name": "Stand-in", "reasoning": false, "input": []string{"text"},
			"contextWindow": 128000, "maxTokens": 8000}},
	}}}
	if err := writeJSONFile(filepath.Join(dir, "models.json"), models); err != nil {
		return nil, err
	}
	settings := map[string]any{"defaultProvider": "standin", "defaultModel": chatModel, "enableInstallTelemetry": false, "quietStartup": true}
	if err := writeJSONFile(filepath.Join(dir, "settings.json"), settings); err != nil {
		return nil, err
	}
	return []string{"PI_OFFLINE=1", "PI_SKIP_VERSION_CHECK=1", "PI_TELEMETRY=0"}, nil
}
