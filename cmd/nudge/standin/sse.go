package standin

import (
	"encoding/json"
	"net/http"
	"unicode/utf8"
)

// sse writes a server-sent event stream, flushing after each event.
type sse struct {
	w http.ResponseWriter
	f http.Flusher
}

// newSSE sends the event-stream headers (status 200) and returns the writer.
func newSSE(w http.ResponseWriter) *sse {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	e := &sse{w: w, f: f}
	e.flush()
	return e
}

// event writes "event: name" and v as JSON data.
func (e *sse) event(name string, v any) {
	b, _ := json.Marshal(v)
	e.w.Write([]byte("event: " + name + "\ndata: "))
	e.w.Write(b)
	e.w.Write([]byte("\n\n"))
	e.flush()
}

// data writes v as JSON data without an event name.
func (e *sse) data(v any) {
	b, _ := json.Marshal(v)
	e.w.Write([]byte("data: "))
	e.w.Write(b)
	e.w.Write([]byte("\n\n"))
	e.flush()
}

// raw writes "data: s" (e.g. the "[DONE]" that ends a chat-completions stream).
func (e *sse) raw(s string) {
	e.w.Write([]byte("data: " + s + "\n\n"))
	e.flush()
}

func (e *sse) flush() {
	if e.f != nil {
		e.f.Flush()
	}
}

// writeJSON answers status with v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// writeError answers an API error: status with body as JSON (each API family has its
// own error shape).
func writeError(w http.ResponseWriter, status int, body any) { writeJSON(w, status, body) }

// deltaSize is the largest delta chunks makes: small, as a model streams tokens, so
// that a marker in the text is split over several deltas as it is in real replies.
const deltaSize = 24

// chunks splits text into deltas of at most deltaSize bytes, on rune boundaries.
// An empty text gives no delta.
func chunks(text string) []string {
	var out []string
	for len(text) > 0 {
		n := min(deltaSize, len(text))
		for n < len(text) && n > 0 && !utf8.RuneStart(text[n]) {
			n--
		}
		if n == 0 { // a rune longer than deltaSize cannot happen; be safe
			_, n = utf8.DecodeRuneInString(text)
		}
		out = append(out, text[:n])
		text = text[n:]
	}
	return out
}
