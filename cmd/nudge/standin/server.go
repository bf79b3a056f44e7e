package standin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// API names an API family that a stand-in speaks.
type API string

// The API families. Each is served by a handler registered from its own file.
const (
	Responses API = "openai-responses"   // POST .../responses (Codex, wire_api = "responses")
	Messages  API = "anthropic-messages" // POST .../v1/messages (Claude Code, ANTHROPIC_BASE_URL)
	Gemini    API = "gemini"             // .../models/M:streamGenerateContent (Gemini CLI)
	Chat      API = "openai-chat"        // POST .../chat/completions (OpenCode, Pi)
)

// Request is one model call as the stand-in received it.
type Request struct {
	API API
	// Prompt is the user text of the turn this call belongs to: the user messages
	// since the model's last reply that ended a turn, joined by "\n". It is the
	// prompt the turn answers, also on a call that returns a tool's result, and it
	// holds every prompt typed before the model answered.
	Prompt string
	// History is the text of every user message in the request, oldest first (the
	// conversation as the CLI sent it). Count reads it.
	History []string
	// ToolResult reports that the last message is a tool result, not a user prompt.
	ToolResult bool
	// Side reports a call that offers the model no tools: not the agent's turn but a
	// side query of the CLI (a session title, a topic check, a quota probe).
	Side bool
	Body []byte    // the raw request body
	At   time.Time // when the call arrived
}

// ToolCall asks the CLI to run a tool, e.g. a shell command that needs approval.
// Args are the tool's arguments as the API family names them; each handler maps a
// ToolCall to its API's own shell tool where Name is empty (see Shell).
type ToolCall struct {
	Name string
	Args map[string]any
}

// Reply is the stand-in's answer to one Request.
type Reply struct {
	Text     string        // streamed as several deltas
	Delay    time.Duration // before the first byte: a slow turn
	Status   int           // non-zero: answer with this HTTP status and an API error instead
	ToolCall *ToolCall     // ask the CLI to run a tool (after Text, if any)
}

// Script chooses the Reply for each Request. Calls are serialised.
type Script func(Request) Reply

// handler serves every HTTP request for one API family.
type handler func(s *Server, w http.ResponseWriter, r *http.Request)

var handlers = map[API]handler{}

// register adds the handler for api; it is called from init in the API's own file.
func register(api API, h handler) {
	if _, dup := handlers[api]; dup {
		panic("standin: API registered twice: " + string(api))
	}
	handlers[api] = h
}

// Server is a running stand-in. Its methods are safe for concurrent use.
type Server struct {
	URL string // http://127.0.0.1:PORT, without a trailing slash
	API API

	script Script
	h      handler
	srv    *http.Server
	ln     net.Listener
	closed chan struct{}
	once   sync.Once

	scriptMu sync.Mutex // serialises script calls
	mu       sync.Mutex
	reqs     []Request
}

// ErrUnknownAPI is returned by Start for an API without a registered handler.
var ErrUnknownAPI = errors.New("standin: unknown API")

// Start serves api on a free loopback port until Close. script chooses each reply;
// nil acks every envelope (Ack).
func Start(api API, script Script) (*Server, error) {
	h, ok := handlers[api]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownAPI, api)
	}
	if script == nil {
		script = Ack
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("standin: listen: %w", err)
	}
	s := &Server{URL: "http://" + ln.Addr().String(), API: api, script: script, h: h, ln: ln, closed: make(chan struct{})}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serveHTTP), ReadHeaderTimeout: 10 * time.Second}
	go s.srv.Serve(ln)
	return s, nil
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) { s.h(s, w, r) }

// Close stops the server: it ends waiting replies and open streams, and waits for the
// handlers to return. It is idempotent.
func (s *Server) Close() error {
	var err error
	s.once.Do(func() {
		close(s.closed)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err = s.srv.Shutdown(ctx); err != nil {
			err = s.srv.Close()
		}
	})
	return err
}

// Requests returns a copy of every model call received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// take records req and returns the script's reply to it.
func (s *Server) take(req Request) Reply {
	req.At = time.Now()
	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	s.mu.Unlock()
	s.scriptMu.Lock()
	defer s.scriptMu.Unlock()
	return s.script(req)
}

// delay waits d before a reply; it returns false if the client went away or the
// server is closing first.
func (s *Server) delay(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
	case <-s.closed:
	}
	return false
}
