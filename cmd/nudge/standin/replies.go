package standin

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/nudgehq/nudge"
)

// AckMarker is the ack marker's prefix, as package ack matches it.
const AckMarker = "ACK_TRIGGER:"

// envelopeRE finds a trigger envelope's header and its id ([A-Za-z0-9_.:@/-]).
var envelopeRE = regexp.MustCompile(`\[BRIDGE_TRIGGER id=([` + nudge.IDCharset + `]+)[ \]]`)

// EnvelopeIDs returns the ids of the trigger envelopes in prompt, in order. The ack a
// stand-in writes is composed from these, never copied from the prompt's own text.
func EnvelopeIDs(prompt string) []string {
	var ids []string
	for _, m := range envelopeRE.FindAllStringSubmatch(prompt, -1) {
		ids = append(ids, m[1])
	}
	return ids
}

// AckLines returns one "ACK_TRIGGER:<id>" line for each envelope in prompt.
func AckLines(prompt string) string {
	var b strings.Builder
	for _, id := range EnvelopeIDs(prompt) {
		b.WriteString(AckMarker + id + "\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// Ack is the plain Script: a short reply that acks every envelope in the prompt. A
// side call gets a short answer without a marker.
func Ack(req Request) Reply {
	if req.Side {
		return Reply{Text: "Stand-in session"}
	}
	acks := AckLines(req.Prompt)
	if acks == "" {
		return Reply{Text: "Hello from the model stand-in."}
	}
	return Reply{Text: "Read the task and done.\n\n" + acks}
}

// StatusProse is a reply whose lines begin with the words that agents' busy, error
// and confirmation cues look for, written as ordinary prose. A runtime that reads
// them as its status instead of the TUI's chrome stays BUSY or ERROR for good.
var StatusProse = []string{
	"Working through the request was quick; nothing is still running (esc to interrupt) is not needed.",
	"Thinking… (about it) it is done.",
	"Queued follow-up inputs: none.",
	"Reconnecting was not necessary.",
	"Error: none of the checks failed.",
	"ERROR: is a word in this sentence, not a status.",
	"API Error: 500 did not happen.",
	"Would you like to run the following command? There is none.",
	"Do you want to proceed? Nothing is waiting.",
	"1. Yes, the task is complete.",
	"Traceback (most recent call last): none here.",
	"panic: not at all.",
	"fatal: nothing fatal.",
	"■ That is a square, nothing was interrupted.",
	"Press up to edit queued messages is a phrase, not a hint.",
}

// Prose acks the prompt's envelopes after lines of prose (StatusProse when nil).
func Prose(req Request, lines []string) Reply {
	if lines == nil {
		lines = StatusProse
	}
	return Reply{Text: strings.Join(lines, "\n\n") + "\n\n" + AckLines(req.Prompt)}
}

// Long acks the prompt's envelopes after n numbered lines: a reply that scrolls.
func Long(req Request, n int) Reply {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "Line %d of a long reply that scrolls the screen.\n", i)
	}
	return Reply{Text: b.String() + "\n" + AckLines(req.Prompt)}
}

// Shell is a ToolCall of the API's own shell tool running command (Codex's shell,
// Claude Code's Bash, ...), which asks the operator for approval.
func Shell(command string) *ToolCall {
	return &ToolCall{Args: map[string]any{"command": command}}
}

// Directive words a prompt may carry to choose its reply under Scripted:
//
//	standin:slow=DURATION   the ack after DURATION (a turn that keeps the agent busy)
//	standin:prose           StatusProse, then the ack
//	standin:long=N          N lines, then the ack
//	standin:error=STATUS    an API error with HTTP STATUS (no ack)
//	standin:tool=`COMMAND`  a shell tool call (approval); after its result, the ack
//
// A prompt without a directive is acked (Ack).
var directiveRE = regexp.MustCompile("standin:(slow|prose|long|error|tool)(?:=(`[^`\n]*`|[^\\s\\]]+))?")

// Scripted is a Script steered by directive words in each prompt (see above); prose
// replaces StatusProse when not nil.
func Scripted(prose []string) Script {
	return func(req Request) Reply {
		if req.Side {
			return Ack(req)
		}
		// A turn holding several prompts (one the operator cut short by denying its
		// tool call, then the next) answers the newest: its envelope's directive.
		last := req.Prompt
		if i := strings.LastIndex(last, "[BRIDGE_TRIGGER "); i > 0 {
			last = last[i:]
		}
		m := directiveRE.FindStringSubmatch(last)
		if m == nil {
			return Ack(req)
		}
		arg := strings.Trim(m[2], "`")
		switch m[1] {
		case "slow":
			d, err := time.ParseDuration(arg)
			if err != nil {
				d = 5 * time.Second
			}
			r := Ack(req)
			if !req.ToolResult {
				r.Delay = d
			}
			return r
		case "prose":
			return Prose(req, prose)
		case "long":
			n, err := strconv.Atoi(arg)
			if err != nil {
				n = 100
			}
			return Long(req, n)
		case "error":
			st, err := strconv.Atoi(arg)
			if err != nil {
				st = 500
			}
			return Reply{Status: st}
		case "tool":
			if req.ToolResult {
				return Reply{Text: "The command ran.\n\n" + AckLines(req.Prompt)}
			}
			return Reply{Text: "I need to run a command first.", ToolCall: Shell(arg)}
		}
		return Ack(req)
	}
}

// Count returns how many times the model was given the prompt of the trigger with id:
// the most user messages holding its envelope in one call's conversation (a call
// carries the conversation so far, so a prompt typed twice shows there twice). Side
// calls do not count. A test wants exactly 1 per trigger.
func Count(reqs []Request, id string) int {
	most := 0
	for _, r := range reqs {
		if r.Side {
			continue
		}
		n := 0
		for _, h := range r.History {
			for _, got := range EnvelopeIDs(h) {
				if got == id {
					n++
				}
			}
		}
		most = max(most, n)
	}
	return most
}
