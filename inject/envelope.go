package inject

import (
	"path/filepath"
	"strings"

	"github.com/nudgehq/nudge/controlmode"

	"github.com/nudgehq/nudge"
)

// MaxFieldLen caps the length of an envelope field value (id, thread, reason).
const MaxFieldLen = 128

// Envelope is the seed's trigger wrapper:
//
//	[BRIDGE_TRIGGER id=… thread=… reason=…] body [/BRIDGE_TRIGGER]
//
// A zero Envelope is valid; empty fields are written as "-".
type Envelope struct {
	ID, Thread, Reason string
	// AckHint adds an instruction asking the agent to acknowledge, worded so that
	// the ack marker itself never appears in the typed text.
	AckHint bool
}

// Field returns s as an envelope field value: bytes outside the id charset (nudge.IsIDByte)
// become '_' (one per rune), the result is cut to MaxFieldLen bytes, the ack
// marker word ACK_TRIGGER (any ASCII case) is broken as ACK-TRIGGER, and "" becomes
// "-". The ack matcher reports ids in this form, so callers compare against Field(id).
func Field(s string) string {
	var buf [MaxFieldLen]byte
	return string(field(&buf, s))
}

// field writes Field(s) into buf and returns the used part of it.
func field(buf *[MaxFieldLen]byte, s string) []byte {
	if s == "" {
		return append(buf[:0], '-')
	}
	b := buf[:0]
	for _, r := range s {
		if len(b) == MaxFieldLen {
			break
		}
		if r < 0x80 && nudge.IsIDByte(byte(r)) {
			b = append(b, byte(r))
		} else {
			b = append(b, '_')
		}
	}
	breakAckWord(b)
	return b
}

// breakAckWord replaces the '_' of every ACK_TRIGGER (any ASCII case) in b by '-'.
// A '-' cannot be part of the word, so no new occurrence appears.
func breakAckWord(b []byte) {
	for i := 0; i+len(ackWord) <= len(b); i++ {
		if containsFold(string(b[i:i+len(ackWord)]), ackWord) {
			b[i+3] = '-'
		}
	}
}

// Wrap returns body inside the envelope, shaped to reach the agent as one message:
// a one-line body gives one line, "[BRIDGE_TRIGGER id=X thread=Y reason=Z] body
// [/BRIDGE_TRIGGER]"; a multi-line body gives a header line, the body lines, the
// hint line if any, and a footer line, to be delivered as one bracketed paste.
//
// body must be a result of Sanitize. Then the result holds no control byte but LF
// and no ACK_TRIGGER: substring, so an echo of it can never be taken for an ack.
func (e Envelope) Wrap(body string) string {
	var idBuf, buf [MaxFieldLen]byte
	id := field(&idBuf, e.ID)
	sep := " "
	if strings.IndexByte(body, '\n') >= 0 {
		sep = "\n"
	}
	var b strings.Builder
	b.Grow(len(body) + 3*MaxFieldLen + 200)
	b.WriteString("[BRIDGE_TRIGGER id=")
	b.Write(id)
	b.WriteString(" thread=")
	b.Write(field(&buf, e.Thread))
	b.WriteString(" reason=")
	b.Write(field(&buf, e.Reason))
	b.WriteString("]")
	b.WriteString(sep)
	b.WriteString(body)
	if e.AckHint {
		b.WriteString(sep)
		writeHint(&b, id)
	}
	b.WriteString(sep)
	b.WriteString("[/BRIDGE_TRIGGER]")
	return b.String()
}

// writeHint writes the ack instruction for id. The marker word is followed by a
// comma, never by a colon, so the typed text never contains the marker.
func writeHint(b *strings.Builder, id []byte) {
	b.WriteString("(When you have read this, acknowledge it: print the word ACK_TRIGGER, ")
	b.WriteString("then a colon, then ")
	b.Write(id)
	b.WriteString(", with no spaces between them; or run: nudge ack ")
	b.Write(id)
	b.WriteString(")")
}

// envelope wraps a trigger's sanitized text in its envelope: what an attempt types.
func (p *Pipeline) envelope(t nudge.Trigger, text string) string {
	reason := t.Reason
	if reason == "" {
		reason = "trigger"
	}
	s := Envelope{ID: t.TriggerID, Thread: t.ThreadID, Reason: reason, AckHint: p.ackHint(t)}.Wrap(text)
	if p.toShell(t) {
		return ShellComment(s)
	}
	return s
}

// ShellComment makes typed text a shell comment, every line of it ("# " before each), so
// that a plain shell shows a prompt typed into it and runs nothing of it: no word of a
// prompt is ever a command, and no syntax error. (zsh takes # as a comment only with
// interactive_comments set; without it, "#" is a command it does not find.)
func ShellComment(s string) string { return "# " + strings.ReplaceAll(s, "\n", "\n# ") }

// toShell reports whether t goes to a plain shell: a runtime nudge spawned (its program is
// known; a registered pane's is not, and gets the envelope as it is) of a profile that
// drives a shell (panes.Profile.DrivesShell) whose program is an interactive shell
// (InteractiveShell: not `cat`, a REPL, or `sh -c` and a shell script, which read the
// text as data).
func (p *Pipeline) toShell(t nudge.Trigger) bool {
	if t.RuntimeID == "" {
		return false
	}
	rt, ok := p.deps.Runtimes.Get(t.RuntimeID)
	if !ok || rt.Dir == "" {
		return false
	}
	prof, ok := p.deps.Runtimes.Profile(rt.Agent)
	if !ok || !prof.DrivesShell() {
		return false
	}
	argv := rt.Argv
	if len(argv) == 0 {
		argv = prof.Launch
	}
	return InteractiveShell(argv)
}

// InteractiveShell reports whether argv starts an interactive shell: a shell (as
// controlmode.IsShell names them) with options only, none of them -c (a command) and no
// script to run.
func InteractiveShell(argv []string) bool {
	if len(argv) == 0 || !controlmode.IsShell(filepath.Base(argv[0])) {
		return false
	}
	for _, a := range argv[1:] {
		switch {
		case !strings.HasPrefix(a, "-") || a == "-" || a == "--":
			return false // a script, or stdin as one
		case !strings.HasPrefix(a, "--") && strings.ContainsRune(a, 'c'):
			return false // -c COMMAND, also in a cluster (-lc)
		}
	}
	return true
}

// ackHint says whether t's envelope asks the agent to print the ack marker: when the
// pipeline is configured to and the runtime's profile wants it (a profile whose agent's
// own record shows its turns does not while that record is read, unless it says so).
func (p *Pipeline) ackHint(t nudge.Trigger) bool {
	if !p.cfg.AckHint || t.RuntimeID == "" {
		return p.cfg.AckHint
	}
	rt, ok := p.deps.Runtimes.Get(t.RuntimeID)
	if !ok {
		return true
	}
	prof, ok := p.deps.Runtimes.Profile(rt.Agent)
	if !ok || prof.AckHint {
		return true
	}
	// The profile's agent keeps a record; while it is not being read (not written yet,
	// or unreadable), the marker is the ack.
	l, ok := p.deps.Acks.(recordLive)
	return !ok || !l.RecordLive(rt.RuntimeID)
}

// recordLive is an Acker that knows whether a runtime's own record is being read.
type recordLive interface {
	RecordLive(runtimeID string) bool
}
