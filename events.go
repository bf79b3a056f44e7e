package nudge

import "time"

// The domain events on the Bus. Each is published by the one room that owns the fact
// (named on the type) and read by whoever subscribes; a search for the type's name finds
// both ends.

// RuntimeChanged: a runtime's record changed and was persisted (panes.Registry). Prev
// is its status before ("" for a runtime just created).
type RuntimeChanged struct {
	Runtime Runtime
	Prev    Status
}

// TriggerChanged: a trigger's receipt changed (inject.Pipeline). Reply is set when the
// change is the reply of the trigger's turn being recorded on its receipt (the event
// stream's "reply" event follows it).
type TriggerChanged struct {
	Trigger Trigger
	Reply   *ReplyRead
}

// ReadinessChanged: a pane's readiness, summary or operator_busy changed and was
// persisted (detector.Monitor). Dialog is the approval dialog on screen as data, when
// the pack reads one.
type ReadinessChanged struct {
	RuntimeID     string
	Workspace     string
	Readiness     Readiness
	Summary       string
	ActionsNeeded []string
	Dialog        *Dialog
	OperatorBusy  bool
}

// OperatorQuiet: a pane stopped being operator_busy (keys quiet for the window, draft
// cleared, copy mode left): its deferred triggers may go now (detector.Monitor).
type OperatorQuiet struct{ RuntimeID string }

// HumanDone: a human who typed into a runtime's pane has been quiet for the quiet
// window and left no draft (detector.Monitor): the orchestrator gets a synchronisation
// trigger (seed 001 §4.1).
type HumanDone struct{ Runtime Runtime }

// QueueEmptied: a pane's agent emptied its own input queue at At: the prompts it
// queued are in a turn now (detector.Monitor).
type QueueEmptied struct {
	RuntimeID string
	At        time.Time
}

// FirstPrompt: a spawn came with a first prompt, to be delivered as a trigger once its
// runtime is ready, never on its command line (panes.Registry; inject.Pipeline takes it).
type FirstPrompt struct {
	Runtime Runtime
	Prompt  string
}

// DialogShown: a new approval dialog is on a runtime's screen (dialogs.Answerer, from the
// detector's ReadinessChanged), for the event stream.
type DialogShown struct {
	RuntimeID string
	Workspace string
	Dialog    Dialog
}

// DialogAnswerSent: a runtime's dialog was answered from afar, by a caller (By names it)
// or the workspace policy (dialogs.Answerer), for the event stream; the answer is
// audited apart.
type DialogAnswerSent struct {
	RuntimeID string
	Workspace string
	DialogID  string
	Title     string
	Option    DialogOption
	By        string
	Reason    string
	Via       string // how the answer went: "tmux" (keys), or the agent's channel ("codex_app_server")
}

// ReplyRead: the turn that took trigger TriggerID's prompt ended in RuntimeID's own
// record, with this reply (ack.Tracker, from the agent's record). It is the agent's
// writing: the pipeline records it on the receipt only if that trigger was handed to
// RuntimeID.
type ReplyRead struct {
	RuntimeID string
	TriggerID string
	Text      string
	Truncated bool      // Text was cut before it was published
	EndedAt   time.Time // when the turn ended (the record's time, else when it was read)
	Evidence  string    // file:line of the turn's end in the record
}

// FallbackStep is one step of a trigger's fallback chain (ack.Chain), for the event
// stream; every step is audited too.
type FallbackStep struct {
	Workspace string    `json:"-"` // the trigger's workspace (its event stream)
	Time      time.Time `json:"time"`
	Event     string    `json:"event"` // fallback_resume_started, fallback_resume_succeeded, ...
	TriggerID string    `json:"trigger_id"`
	ThreadID  string    `json:"thread_id,omitempty"`
	RuntimeID string    `json:"runtime_id,omitempty"`
	Cause     string    `json:"cause"`           // the failure code that started the chain
	Chain     []string  `json:"chain"`           // steps taken so far, e.g. [resume resume spawn]
	Argv      []string  `json:"argv,omitempty"`  // what was launched (never a prompt: elided if it were)
	Where     string    `json:"where,omitempty"` // "pane %N", or "runtime ID pane %N" beside
	Ended     string    `json:"ended,omitempty"` // how the program the launch replaced ended: "ended by SIGTERM after 3s (pid 12)"
	Error     string    `json:"error,omitempty"`
	Code      string    `json:"error_code,omitempty"`
}

// PaneEvent: a control connection reported something about a workspace's panes that
// the readiness monitor re-reads the screen for (panes.Registry).
type PaneEvent struct {
	Workspace string
	Pane      int // the pane's %N number; -1 for a workspace-wide change
	Kind      PaneEventKind
}

// PaneEventKind is what a PaneEvent reports.
type PaneEventKind uint8

const (
	PaneModeChanged   PaneEventKind = iota + 1 // the pane entered or left a mode (copy mode)
	PaneOutputPaused                           // tmux paused the pane's output (flow control): output was dropped
	PaneLayoutChanged                          // windows or sessions were added, closed or changed
)

// Collision is the collision event of a trigger held for a person past the max defer
// window (seed 000 §12 "emit collision event"): what the event stream and the audit log
// carry.
type Collision struct {
	TriggerID string    `json:"trigger_id"`
	ThreadID  string    `json:"thread_id,omitempty"`
	RuntimeID string    `json:"runtime_id"`
	Code      Code      `json:"error_code"` // DEFER_TIMEOUT: the max defer window has passed
	Operator  string    `json:"operator"`   // what the person is doing (typing, a draft, copy mode)
	Since     time.Time `json:"since"`      // when the trigger began to wait for them
	HeldUntil time.Time `json:"held_until"` // the trigger waits for them until then, then fails with DEFER_TIMEOUT
}

// TriggerTyped: a trigger's first typing was written to tmux, Took after the API began
// reading its request: nudge's own share of the delivery (inject.Pipeline; metrics).
type TriggerTyped struct {
	TriggerID string
	Took      time.Duration
}

// CollisionHeld: Trigger has been held for a person past the max defer window
// (inject.Pipeline): its collision event.
type CollisionHeld struct {
	Trigger   Trigger
	Collision Collision
}
