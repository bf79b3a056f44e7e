// Package detector decides what a managed pane is doing: whether a human is
// typing into it, and whether the agent in it is READY, BUSY,
// NEEDS_CONFIRMATION or in ERROR (seed 002, DESIGN.md "detector").
//
// It has two halves. The pure half is functions over one screen capture:
//
//	Pack            per-CLI cues as data (regexes for each state, the composer,
//	                the prompt region size, few-shot examples for the LLM).
//	                Defaults are embedded from packs/*.json (codex, claude,
//	                opencode, gemini, pi, shell); LoadPacks lets a user
//	                directory override them file by file.
//	Cue             one cue: a regexp and where (relative to the composer) and in
//	                which style it counts.
//	Composer        where a CLI's input line is, how its placeholder looks and how it
//	                folds a large paste ("[Pasted Content 4096 chars]").
//	Screen          a capture plus the cursor row, the input of ClassifyScreen.
//	Classification  the verdict: State (a nudge.Readiness), Summary,
//	                ActionsNeeded, Draft (the composer's unsubmitted text),
//	                Composer (an input line is on screen), Queued (input waits
//	                in the agent's own queue) and Confident (false when no cue
//	                decided; ask the LLM).
//	Pack.Ours       whether a composer holds what nudge typed, as the agent shows
//	                it: folded into paste placeholders, or only a part of it.
//	Classify        Classify(pack, capture) = ClassifyScreen with no cursor.
//	LLM, LLMConfig  the optional OpenAI-compatible chat-completions classifier,
//	                used only when a pack is unsure; off when the config is nil.
//	                The screen it sends is stripped (nudge.StripANSI) and its
//	                secrets masked (nudge.Redact) before it leaves the machine.
//	LLMCall         one question the Monitor asked it, for metrics
//	                (published on MonitorConfig.Bus): its LLMOutcome (LLMOutcomeOf: ok,
//	                error, timeout, refused, invalid, canceled), time and
//	                whether its verdict overrode the pack's.
//
// # Input
//
// Classify takes the output of `tmux capture-pane -p -e` (SGR attributes kept)
// or of plain `capture-pane -p`. Attributes matter only for drafts: the text
// of a composer line drawn dim (or in a colour the pack lists) is placeholder
// text, never a draft. Everything else works on the ANSI-stripped text, so a
// plain capture classifies the same; its placeholder is then recognised by the
// pack's placeholder regexes instead. Pass the cursor row (ClassifyScreen) when
// known: for a shell it tells a prompt with a draft from a running command's
// echoed command line.
//
// # Rules
//
// Only the prompt region (the bottom N lines, from the last non-blank line or
// the cursor row) is classified; scrollback above it never decides. Readiness comes
// from the TUI's own chrome, never from the agent's prose: a Cue may be scoped to its
// place relative to the composer (the N lines above it, where the status or spinner
// row is drawn; the footer under it) and to a style, so a reply that says "Working
// on it", "Error: ..." or "Do you want to proceed?" decides nothing. Inside the region:
// a confirmation cue wins over everything when it is a dialog (at or below the
// composer, or the composer line is the dialog's selected option, or no composer is
// drawn); then a busy cue (below the composer, or anywhere in its place for CLIs whose
// composer is always drawn); then an error cue below the composer (or, for
// always-drawn composers, the newest history entry right above it); then a
// composer/idle cue means READY. A turn-finished marker (Pack.TurnDone) below a busy,
// error or confirmation line means that line belongs to a turn that is over. Error
// cues are anchored line patterns (a traceback header, "panic:", "Error:" at the
// start of a line), so error words in prose do not count.
//
// The composer is the bottom-most line matching the pack's prompt, or the cursor
// line for a shell, or, for a TUI that draws its sent messages in the same box
// style as its input (OpenCode), the prompt lines right above the line the pack
// names as drawn under the input box (composer.above).
//
// # The live half
//
// Monitor (NewMonitor, MonitorConfig, Close) follows every managed pane: Feed takes its
// %output (PaneOutput, a direct call on the control connection's read goroutine through
// the Bus's output lane, without allocating or blocking; the text is stripped with
// nudge.Plain), Event what the connection reports of its panes (nudge.PaneEvent), and
// runtime changes (nudge.RuntimeChanged: a new pane is watched at once, a new program's
// screen read afresh); it subscribes to them on the Bus in NewMonitor. Output
// marks a pane BUSY; once the pane has been quiet for its profile's ReadyQuiet the
// Monitor captures it (capture-pane over the workspace's control connection) and
// classifies it, asking the LLM only when the pack is unsure and never waiting for it
// (its answer replaces the rules' verdict when it comes). Output over a dialog's verdict
// (NEEDS_CONFIRMATION) is not taken for work: an agent waiting for its operator still
// redraws (a blinking title, a timer above the dialog), so the verdict stands until a
// capture shows the dialog gone, the quiet one or, while output keeps flowing, one every
// second (two in a row without the dialog end it). Human input is known exactly
// from a root-table Any binding on nudge's own tmux server (BindKeys), which signals a
// wait-for channel watched on a control connection of its own (on tmux 3.2, whose bare
// send-keys does not repeat its key, each common key is bound on its own: humankeys.go);
// otherwise, and for the keys not bound on 3.2, it is inferred from output nudge did not
// cause, confirmed by list-clients. Readiness, summary,
// operator_busy, the input line and a discovered session id are persisted through the
// Registry and published on the Bus (nudge.ReadinessChanged, HumanDone then
// OperatorQuiet, QueueEmptied; Captured and LLMCall for the status files and metrics). The Monitor answers the inject pipeline's gates: Collision, Readiness,
// Composer, Injecting, the input-line questions Typed, Ours, Queued, and HumanTaken (a
// pane a human just left is held until the pipeline took up its HumanDone).
//
// Inside, the Monitor is a few types, each with its own state:
//
//	paneIndex   the watched panes by runtime id and by tmux server (host and socket)
//	            and pane number, and the key watches by server (under one RWMutex); sync rewrites it, Feed, Event
//	            and the gates look panes up in it.
//	paneState   one runtime as the Monitor sees it: what Feed records (atomics, the
//	            output tail) and the verdict, draft, keys and intake the gates read
//	            (under its mu).
//	paneLoop    one runtime's goroutine and the timers only it touches (quiet capture,
//	            the human's quiet window, the fallback human check, the intake window,
//	            the dialog check while output flows).
//	humanWatch  the key-event connection of one tmux server: the Any binding (or each
//	            key's, on tmux 3.2) and the wait-for loop that turns a key into a pane.
//	reporter    persists readiness, operator_busy and the input line through the
//	            Registry and publishes ReadinessChanged, HumanDone and OperatorQuiet.
//	llmAsker    asks the LLM about a screen the pack was unsure of, one question per
//	            pane in flight, and applies its answer.
//
// # Goroutines
//
// The Monitor owns them all, counts them in one WaitGroup and stops them in Close: one
// per runtime (paneLoop.run: its quiet, key, confirmation and intake timers; started when
// the runtime appears, cancelled when it goes), one that re-reads the registry (Refresh),
// one key-event watcher per tmux server with BindKeys (humanWatch.run: it redials its
// connection and removes the binding on Close), one per LLM question in flight
// (llmAsker.ask; cancelled when a newer screen replaces it), and its bus subscriber
// (nudge.Client "detector": runtime changes and pane events; closed first in Close). The
// pure half starts none.
package detector
