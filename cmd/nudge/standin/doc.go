// Package standin serves loopback stand-ins for the model APIs that the agent CLIs
// speak, so that tests and benchmarks can drive real Codex, Claude Code, Gemini CLI,
// OpenCode and Pi sessions through complete turns without a network or a real key.
//
// A Server listens on 127.0.0.1 (never another address), speaks one API family, and
// answers every model call with the Reply a Script chooses for it. It streams the
// reply as server-sent events in several deltas, the way the real API does, and it
// records every call (Requests) so a test can assert that the model received each
// prompt exactly once and whole.
//
// Main types:
//
//	API      an API family: Responses (Codex), Messages (Claude Code), Gemini, Chat
//	Request  one model call as received: the turn's prompt, the conversation's user
//	         messages (History), tool result or not, side call or not, raw body
//	Reply    what to answer: text, a delay, an HTTP error status, or a tool call
//	Script   chooses the Reply for a Request; see Ack, Prose, Long, Scripted (steered
//	         by words in the prompt: standin:slow=6s, standin:prose, standin:tool=`cmd`)
//	Server   the listener; Start, URL, Requests, Close
//	Count    how many times the model was given a trigger's prompt (want 1)
//	Agents   each CLI's own configuration for a stand-in (private HOME, dummy key)
//	Prompts  a trigger body of every kind a full-turn run sends
//
// # Adding an API
//
// Each API family lives in its own file, which registers its handler from init:
//
//	func init() { register(Gemini, serveGemini) }
//	func serveGemini(s *Server, w http.ResponseWriter, r *http.Request) { ... }
//
// The handler gets every HTTP request the server receives (any method, any path) and
// routes it itself. For a model call it builds a Request (API, Prompt and History —
// turn() computes both from the conversation reduced to msg values —, ToolResult,
// Side, Body; At is set by the server) and calls s.take(req), which records it and returns
// the script's Reply. Then it calls s.delay(r, reply.Delay) (false: the client went
// away or the server is closing), and answers either reply.Status with writeError or
// the stream, through newSSE(w) and its event/data methods; chunks(reply.Text) splits
// the text into the deltas to send. Calls that are not model calls (a models list, a
// token count) are answered without take and are not recorded.
//
// Scripts are called one at a time (the server serialises them), so a Script may keep
// state without a lock.
package standin
