package standin

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
)

// The Gemini API, as Gemini CLI speaks it with GOOGLE_GEMINI_BASE_URL and an API key:
// POST {base}/v1beta/models/MODEL:streamGenerateContent?alt=sse for the agent's turn
// (server-sent events, each a GenerateContentResponse), POST
// .../MODEL:generateContent for side calls (a session summary; the model router's
// JSON-schema answer) and .../MODEL:countTokens.

func init() { register(Gemini, serveGemini) }

// geminiPart is one part of a Gemini content: text, a function call or its response.
type geminiPart struct {
	Text             string          `json:"text,omitempty"`
	Thought          bool            `json:"thought,omitempty"`
	FunctionCall     json.RawMessage `json:"functionCall,omitempty"`
	FunctionResponse json.RawMessage `json:"functionResponse,omitempty"`
}

type geminiContent struct {
	Role  string       `json:"role"`
	Parts []geminiPart `json:"parts"`
}

func serveGemini(s *Server, w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	method := path[strings.LastIndexByte(path, ':')+1:]
	if r.Method != http.MethodPost || !strings.Contains(path, "/models/") || !strings.Contains(path, ":") {
		writeError(w, http.StatusNotFound, geminiError(http.StatusNotFound, "no such endpoint: "+path))
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	if method == "countTokens" {
		writeJSON(w, http.StatusOK, map[string]any{"totalTokens": 100})
		return
	}
	if method != "streamGenerateContent" && method != "generateContent" {
		writeError(w, http.StatusNotFound, geminiError(http.StatusNotFound, "no such method: "+method))
		return
	}
	var in geminiRequest
	if err := json.Unmarshal(body, &in); err != nil {
		writeError(w, http.StatusBadRequest, geminiError(http.StatusBadRequest, err.Error()))
		return
	}
	var tools []string
	for _, t := range in.Tools {
		for _, f := range t.FunctionDeclarations {
			tools = append(tools, f.Name)
		}
	}
	req := Request{API: Gemini, Body: body, Side: len(tools) == 0}
	req.Prompt, req.History, req.ToolResult = geminiTurn(in.Contents)
	reply := s.take(req)
	if !s.delay(r, reply.Delay) {
		return
	}
	if reply.Status != 0 {
		writeError(w, reply.Status, geminiError(reply.Status, fmt.Sprintf("stand-in error %d", reply.Status)))
		return
	}
	if in.GenerationConfig.ResponseMimeType == "application/json" {
		reply = in.schemaReply()
	}
	if method == "generateContent" {
		writeJSON(w, http.StatusOK, geminiResponse(geminiParts(reply, tools), true))
		return
	}
	e := newSSE(w)
	for _, d := range chunks(reply.Text) {
		e.data(geminiResponse([]map[string]any{{"text": d}}, false))
	}
	var last []map[string]any
	if reply.ToolCall != nil {
		last = geminiParts(Reply{ToolCall: reply.ToolCall}, tools)
	}
	e.data(geminiResponse(last, true))
}

// geminiRequest is the part of a generateContent request the stand-in reads.
type geminiRequest struct {
	Contents []geminiContent `json:"contents"`
	Tools    []struct {
		FunctionDeclarations []struct {
			Name string `json:"name"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
	GenerationConfig struct {
		ResponseMimeType   string          `json:"responseMimeType"`
		ResponseJSONSchema json.RawMessage `json:"responseJsonSchema"`
		ResponseSchema     json.RawMessage `json:"responseSchema"`
	} `json:"generationConfig"`
}

// schemaReply answers a side call that wants JSON of a schema (the model router, a
// next-speaker check) with the schema's plainest value, whatever the script said.
func (in geminiRequest) schemaReply() Reply {
	schema := in.GenerationConfig.ResponseJSONSchema
	if len(schema) == 0 {
		schema = in.GenerationConfig.ResponseSchema
	}
	b, _ := json.Marshal(schemaValue(schema))
	return Reply{Text: string(b)}
}

// geminiTurn reads a Gemini conversation (see turn): a content with a function
// response is a tool's result, one with a function call the model asking for a tool;
// Gemini CLI's <session_context> part is not the user's text. toolResult reports
// that the last content is a function's response.
func geminiTurn(contents []geminiContent) (prompt string, history []string, toolResult bool) {
	ms := make([]msg, 0, len(contents))
	for _, c := range contents {
		m := msg{role: c.Role}
		if m.role == "model" {
			m.role = "assistant"
		}
		var texts []string
		for _, p := range c.Parts {
			switch {
			case len(p.FunctionResponse) > 0:
				m.role = "tool"
			case len(p.FunctionCall) > 0:
				m.toolCall = true
			case p.Text != "" && !p.Thought && !strings.HasPrefix(p.Text, "<session_context>"):
				texts = append(texts, p.Text)
			}
		}
		if m.role != "tool" {
			m.text = strings.Join(texts, "\n")
		}
		ms = append(ms, m)
	}
	toolResult = len(ms) > 0 && ms[len(ms)-1].role == "tool"
	prompt, history = turn(ms)
	return prompt, history, toolResult
}

// geminiParts is reply's text and function call as content parts. A ToolCall without
// a Name is Gemini CLI's run_shell_command (which asks for approval).
func geminiParts(reply Reply, tools []string) []map[string]any {
	var parts []map[string]any
	if reply.Text != "" {
		parts = append(parts, map[string]any{"text": reply.Text})
	}
	if tc := reply.ToolCall; tc != nil {
		name, args := tc.Name, tc.Args
		if name == "" {
			name = "run_shell_command"
			args = map[string]any{"command": tc.Args["command"], "description": "Run a command"}
		}
		parts = append(parts, map[string]any{"functionCall": map[string]any{"name": name, "args": args}})
	}
	return parts
}

// geminiResponse is one GenerateContentResponse holding parts; last adds the finish
// reason and the usage, as the last chunk of a stream carries them.
func geminiResponse(parts []map[string]any, last bool) map[string]any {
	if parts == nil {
		parts = []map[string]any{}
	}
	cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
	resp := map[string]any{"candidates": []any{cand}, "modelVersion": "gemini-standin"}
	if last {
		cand["finishReason"] = "STOP"
		resp["usageMetadata"] = map[string]any{"promptTokenCount": 100, "candidatesTokenCount": 20, "totalTokenCount": 120}
	}
	return resp
}

func geminiError(code int, msg string) map[string]any {
	status := "INTERNAL"
	switch {
	case code == http.StatusTooManyRequests:
		status = "RESOURCE_EXHAUSTED"
	case code == http.StatusNotFound:
		status = "NOT_FOUND"
	case code < 500:
		status = "INVALID_ARGUMENT"
	case code == http.StatusServiceUnavailable:
		status = "UNAVAILABLE"
	}
	return map[string]any{"error": map[string]any{"code": code, "message": msg, "status": status}}
}

// schemaValue returns the plainest value of a JSON schema: an object with every
// property, the first of an enum, "stand-in" for a string, 1 for a number.
func schemaValue(raw json.RawMessage) any {
	var s struct {
		Type       string                     `json:"type"`
		Enum       []any                      `json:"enum"`
		Properties map[string]json.RawMessage `json:"properties"`
		Items      json.RawMessage            `json:"items"`
	}
	if json.Unmarshal(raw, &s) != nil {
		return map[string]any{}
	}
	if len(s.Enum) > 0 {
		return s.Enum[0]
	}
	switch strings.ToLower(s.Type) {
	case "string":
		return "stand-in"
	case "integer", "number":
		return 1
	case "boolean":
		return false
	case "array":
		if len(s.Items) > 0 {
			return []any{schemaValue(s.Items)}
		}
		return []any{}
	}
	obj := map[string]any{}
	for k, v := range s.Properties {
		obj[k] = schemaValue(v)
	}
	return obj
}

func init() { Agents["gemini"] = AgentSetup{Gemini, setupGemini} }

// setupGemini points Gemini CLI at the stand-in with GOOGLE_GEMINI_BASE_URL and a
// dummy GEMINI_API_KEY (the chosen sign-in in ~/.gemini/settings.json), trusts root,
// pins the model (so no routing call picks one), and turns off the auto-update, its
// notification, usage statistics and telemetry.
func setupGemini(home, root, url string) ([]string, error) {
	dir := filepath.Join(home, ".gemini")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	settings := map[string]any{
		"security":  map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}},
		"model":     map[string]any{"name": "gemini-2.5-flash"},
		"general":   map[string]any{"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
		"privacy":   map[string]any{"usageStatisticsEnabled": false},
		"telemetry": map[string]any{"enabled": false},
	}
	if err := writeJSONFile(filepath.Join(dir, "settings.json"), settings); err != nil {
		return nil, err
	}
	if err := writeJSONFile(filepath.Join(dir, "trustedFolders.json"), map[string]any{root: "TRUST_FOLDER"}); err != nil {
		return nil, err
	}
	// Not CI=false: Gemini CLI runs non-interactively when CI is "true", as it is in a
	// CI job, and nudge's gemini profile removes CI from its environment at launch.
	return []string{"GOOGLE_GEMINI_BASE_URL=" + url, "GEMINI_API_KEY=" + DummyKey}, nil
}

// writeJSONFile writes v as JSON to a file only its owner can read.
func writeJSONFile(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o600)
}
