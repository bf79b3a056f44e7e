package standin

import "strings"

// msg is one item of a conversation as a request carries it, reduced to what the
// stand-ins need.
type msg struct {
	role     string // "user", "assistant", or another role (system, developer, tool)
	text     string // the text parts, joined
	toolCall bool   // the model asked for a tool (an assistant tool call)
}

// turn returns the prompt of the turn a request belongs to — the user texts after
// the model's last reply that ended a turn (an assistant message that is neither a
// tool call nor followed by one), oldest first, joined by "\n" — and the text of every
// user message in the request (the conversation so far).
//
// So a tool's result belongs to the turn of the prompt that asked for it, and two
// prompts typed before the model answered (a CLI that sends a queued message along,
// or resends the pending turn with it) are one turn that answers both.
func turn(ms []msg) (prompt string, history []string) {
	for _, m := range ms {
		if m.role == "user" && m.text != "" {
			history = append(history, m.text)
		}
	}
	var texts []string
	for i := len(ms) - 1; i >= 0; i-- {
		m := ms[i]
		if m.role == "assistant" && !m.toolCall && (i+1 == len(ms) || !ms[i+1].toolCall) {
			break // the model's reply that ended the previous turn
		}
		if m.role == "user" && m.text != "" {
			texts = append(texts, m.text)
		}
	}
	for i, j := 0, len(texts)-1; i < j; i, j = i+1, j-1 {
		texts[i], texts[j] = texts[j], texts[i]
	}
	return strings.Join(texts, "\n"), history
}
