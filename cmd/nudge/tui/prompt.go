package tui

import (
	"context"
	"strconv"
	"strings"

	"github.com/gdamore/tcell/v2"

	"github.com/nudgehq/nudge/cmd/nudge/api"
)

// A line typed at the bottom of the screen: a `:` command, the text of a trigger, the
// reason of a stop. Enter hands it to done (which may quit), Esc drops it.

// linePrompt is a line being typed.
type linePrompt struct {
	label    string // shown before the text: ":", "trigger rt_w.a: "
	hint     string // the keys line meanwhile
	text     []rune
	max      int                    // runes kept
	required string                 // the message when Enter finds no text ("": none needed)
	done     func(text string) bool // on Enter; true quits the dashboard
}

// promptMax bounds a typed line; a trigger's text may be longer (promptTriggerMax).
const (
	promptMax        = 200
	promptTriggerMax = 4000
)

func (ui *watchUI) promptKey(ev *tcell.EventKey) bool {
	m := ui.m
	p := m.prompt
	switch ev.Key() {
	case tcell.KeyEscape, tcell.KeyCtrlC:
		m.prompt, m.msg = nil, strings.TrimSpace(strings.TrimSuffix(p.label, ": "))+" cancelled"
	case tcell.KeyEnter:
		text := strings.TrimSpace(string(p.text))
		if text == "" && p.required != "" {
			m.msg = p.required
			return false
		}
		m.prompt = nil
		return p.done(text)
	case tcell.KeyBackspace, tcell.KeyBackspace2:
		if n := len(p.text); n > 0 {
			p.text = p.text[:n-1]
		} else if p.label == ":" {
			m.prompt = nil
		}
	case tcell.KeyCtrlU:
		p.text = nil
	case tcell.KeyRune:
		if len(p.text) < p.max {
			p.text = append(p.text, ev.Rune())
		}
	}
	return false
}

// commandHelp is the keys line while a : command is typed.
const commandHelp = "q quit  trigger TEXT  pause  resume  stop REASON  approve|deny REASON  answer N REASON  tail  attach  open ID  filter WORDS  sort name|state|recent"

func (ui *watchUI) startCommand() {
	ui.m.prompt = &linePrompt{label: ":", hint: commandHelp, max: promptTriggerMax, done: ui.command}
	ui.m.msg = ""
}

// command runs a : command; it reports whether to quit.
func (ui *watchUI) command(line string) bool {
	m := ui.m
	verb, rest, _ := strings.Cut(line, " ")
	rest = strings.TrimSpace(rest)
	switch verb {
	case "":
	case "q", "q!", "quit", "exit":
		return true
	case "t", "trigger", "send":
		ui.withRuntime(func(rt api.Runtime) { ui.sendTrigger(rt, rest) }, rest != "", "trigger TEXT: the prompt to send")
	case "pause", "resume":
		ui.withRuntime(func(rt api.Runtime) { ui.setPaused(rt, verb == "pause") }, true, "")
	case "stop":
		ui.withRuntime(func(rt api.Runtime) { ui.stop(rt, rest) }, rest != "", "stop REASON: why (it goes into the audit log)")
	case "approve", "deny":
		ui.verdictCmd(verb == "approve", rest)
	case "answer":
		n, reason, _ := strings.Cut(rest, " ")
		k, err := strconv.Atoi(n)
		if err != nil || strings.TrimSpace(reason) == "" {
			m.msg = "answer N REASON: the option's number and why"
			return false
		}
		ui.answerNow(k, strings.TrimSpace(reason))
	case "tail", "logs", "l":
		ui.openTail()
	case "attach", "a":
		ui.attach()
	case "open", "rt":
		if _, ok := m.fleet.Runtime(rest); !ok {
			m.msg = "no runtime " + rest
			return false
		}
		m.sel = rest
		ui.openRuntime()
	case "filter", "f":
		m.filter = rest
		m.fixSel()
	case "sort":
		for s := range sortModes {
			if s.String() == rest {
				m.sort = s
				return false
			}
		}
		m.msg = "sort name|state|recent"
	case "help", "h":
		m.help = true
	case "r", "refresh":
		ui.refreshPage()
	default:
		m.msg = "no command " + strconv.Quote(verb) + " (" + commandHelp + ")"
	}
	return false
}

// withRuntime runs fn on the selected runtime when ok, else says usage.
func (ui *watchUI) withRuntime(fn func(api.Runtime), ok bool, usage string) {
	rt, has := ui.m.selected()
	switch {
	case !has:
		ui.m.msg = "no runtime selected"
	case !ok:
		ui.m.msg = usage
	default:
		fn(rt)
	}
}

// startTrigger asks for the text of a trigger to the selected runtime.
func (ui *watchUI) startTrigger() {
	rt, ok := ui.m.selected()
	if !ok {
		return
	}
	ui.m.prompt = &linePrompt{label: "trigger " + rt.RuntimeID + ": ", max: promptTriggerMax, required: "type the prompt to send (Esc cancels)",
		hint: "type the prompt  ⏎ send it as a trigger (queued until the agent is ready)  Esc cancel",
		done: func(text string) bool { ui.sendTrigger(rt, text); return false }}
	ui.m.msg = ""
}

// sendTrigger sends text to rt as a trigger, with the same rules as `nudge trigger`.
func (ui *watchUI) sendTrigger(rt api.Runtime, text string) {
	agent := rt.AgentID
	if agent == "" {
		agent = rt.Role
	}
	ui.async(func(ctx context.Context) string {
		t, err := ui.c.Trigger(ctx, api.TriggerRequest{Workspace: rt.WorkspaceID, Agent: agent, Prompt: text})
		if err != nil {
			return "trigger " + rt.RuntimeID + ": " + err.Error()
		}
		return "sent " + t.TriggerID + " to " + rt.RuntimeID + ": " + apiReceiptWord(t)
	})
}

// startStop asks why before stopping the selected runtime.
func (ui *watchUI) startStop() {
	rt, ok := ui.m.selected()
	if !ok {
		return
	}
	ui.m.prompt = &linePrompt{label: "stop " + rt.RuntimeID + " - reason: ", max: promptMax, required: "a reason is required (Esc cancels)",
		hint: "type why  ⏎ stop the agent (C-c, then signals)  Esc cancel",
		done: func(text string) bool { ui.stop(rt, text); return false }}
	ui.m.msg = ""
}

func (ui *watchUI) stop(rt api.Runtime, reason string) {
	ui.async(func(ctx context.Context) string {
		if _, err := ui.c.Stop(ctx, rt.RuntimeID, reason); err != nil {
			return "stop " + rt.RuntimeID + ": " + err.Error()
		}
		return "stopped " + rt.RuntimeID
	})
}

// startVerdict answers the selected runtime's dialog with its yes (or no) option, asking
// for a reason first.
func (ui *watchUI) startVerdict(yes bool) {
	if n := ui.verdictOption(yes); n > 0 {
		ui.startAnswer(n)
	}
}

// verdictCmd is :approve and :deny, the reason given on the line.
func (ui *watchUI) verdictCmd(yes bool, reason string) {
	if reason == "" {
		ui.m.msg = "approve|deny REASON: why (it goes into the audit log)"
		return
	}
	if n := ui.verdictOption(yes); n > 0 {
		ui.answerNow(n, reason)
	}
}

// verdictOption is the 1-based number of the dialog's approve (or deny) option; 0, and
// a message, when there is no dialog or no option reads so.
func (ui *watchUI) verdictOption(yes bool) int {
	m := ui.m
	d := m.dialog(m.sel)
	if d == nil {
		m.msg = "no dialog waits on " + orDash(m.sel)
		return 0
	}
	key, word := d.DenyKey, "no"
	if yes {
		key, word = d.ApproveKey, "yes"
	}
	for i, o := range d.Options {
		if key != "" && o.Key == key {
			return i + 1
		}
	}
	m.msg = "no option of this dialog reads as " + word + ": answer with its number (1-9)"
	return 0
}

// answerNow answers the selected runtime's dialog with its n-th option and reason.
func (ui *watchUI) answerNow(n int, reason string) {
	ui.startAnswer(n)
	if ui.m.answering == nil {
		ui.m.msg = "no dialog option " + strconv.Itoa(n) + " on " + orDash(ui.m.sel)
		return
	}
	ui.m.answerReason = []rune(reason)
	ui.answerKey(tcell.NewEventKey(tcell.KeyEnter, 0, tcell.ModNone))
}
