package nudge

// Code is a failure code (seed 001 §10, DESIGN.md). The zero value means no error.
type Code string

// Failure codes. They appear in receipts as error_code, in API errors and in the audit.
const (
	TargetNotFound     Code = "TARGET_NOT_FOUND"
	PaneDead           Code = "PANE_DEAD"
	SendKeysError      Code = "SEND_KEYS_ERROR"
	AckTimeout         Code = "ACK_TIMEOUT"
	OperatorBusy       Code = "OPERATOR_BUSY"
	DeferTimeout       Code = "DEFER_TIMEOUT"
	ResumeFailed       Code = "RESUME_FAILED"
	SpawnFailed        Code = "SPAWN_FAILED"
	RegistryDrift      Code = "REGISTRY_DRIFT"
	TriggerRateLimited Code = "TRIGGER_RATE_LIMITED"
	ThreadAutoBlocked  Code = "THREAD_AUTO_BLOCKED"
	UnmanagedRuntime   Code = "UNMANAGED_RUNTIME"
	PayloadRejected    Code = "PAYLOAD_REJECTED"

	// Hold codes: the error_code of a deferred trigger says what holds it. Every hold has
	// a deadline (the receipt's deferred_until); one that expires ends in DEFER_TIMEOUT.
	AgentBusy              Code = "AGENT_BUSY"               // the agent is working and does not queue input
	AgentNeedsConfirmation Code = "AGENT_NEEDS_CONFIRMATION" // a confirmation dialog is open: never typed into unless forced
	AgentUnknown           Code = "AGENT_UNKNOWN"            // the screen is not understood and the agent does not queue input
	RuntimePaused          Code = "RUNTIME_PAUSED"           // nudge pause RUNTIME
	RuntimeCooldown        Code = "RUNTIME_COOLDOWN"         // the runtime's circuit breaker is open after repeated failures
	InputLineBusy          Code = "INPUT_LINE_BUSY"          // another trigger's envelope waits unentered in the input line
	FallbackInProgress     Code = "FALLBACK_IN_PROGRESS"     // another trigger's fallback is relaunching the runtime
	RuntimeStarting        Code = "RUNTIME_STARTING"         // the runtime's agent has not shown READY yet (until its start timeout)
	HostUnreachable        Code = "HOST_UNREACHABLE"         // the workspace's host cannot be reached over ssh (redialled with backoff)
	// OrchestratorSync: a human intervened in the worker's pane, and its triggers wait until
	// the orchestrator took the sync trigger sent for it (seed 000 §13.2); the hold lifts
	// then, or when that trigger closes, or after the max hold.
	OrchestratorSync Code = "ORCHESTRATOR_SYNC"

	// RuntimeStopped: the trigger's runtime was stopped (`nudge stop`) and stays stopped
	// until `nudge restart` starts it again: the trigger fails, nothing is relaunched.
	RuntimeStopped Code = "RUNTIME_STOPPED"

	// StopFailed: nudge stop could not end the pane's program (a process outlived SIGKILL
	// and its grace); the runtime is failed, its pane kept.
	StopFailed Code = "STOP_FAILED"

	// API-level codes (not delivery failures).
	BadRequest   Code = "BAD_REQUEST"
	NotFound     Code = "NOT_FOUND"
	Unauthorized Code = "UNAUTHORIZED"
	Forbidden    Code = "FORBIDDEN"
	Conflict     Code = "CONFLICT"
	// IdempotencyConflict: a trigger_id already used by a request with other fields
	// (HTTP 409); the message names them.
	IdempotencyConflict Code = "IDEMPOTENCY_CONFLICT"
	// DialogChanged: an answer named a dialog that is no longer the one on screen.
	DialogChanged Code = "DIALOG_CHANGED"
	// NoDialog: an answer for a runtime that shows no dialog nudge can read.
	NoDialog Code = "NO_DIALOG"
	// DialogAnswered: an answer for a runtime whose dialog another answer is being sent
	// to, or was answered and is still on screen (the agent has not taken the key yet).
	DialogAnswered Code = "DIALOG_ANSWERED"
	Internal       Code = "INTERNAL"
	Unavailable    Code = "UNAVAILABLE"
	// EventsExpired: /v1/events?since=N asked to resume from a sequence whose successors
	// are no longer all kept (HTTP 410, like a Kubernetes watch's "too old" answer).
	EventsExpired Code = "EVENTS_EXPIRED"
)

// Error is an error carrying a failure code. Branch on it with errors.As.
type Error struct {
	Code    Code
	Message string
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Errorf-free constructor, to keep this package import-free.
func NewError(code Code, msg string) *Error { return &Error{Code: code, Message: msg} }

// ErrLaunchedWithoutPrompt is returned (with the backend) by a fallback that started a
// fresh runtime whose profile cannot take a prompt at launch: the runtime is up but has
// not got the prompt, which must still be delivered to it live. Match it with errors.Is.
const ErrLaunchedWithoutPrompt = sentinel("fresh runtime launched without the prompt: deliver it live")

type sentinel string

// Launched says where a fallback launch put a trigger's prompt: the receipt names the
// runtime and pane, so a prompt never goes to a pane the receipt does not name.
type Launched struct {
	Backend   string // BackendResume or BackendSpawn
	RuntimeID string // the runtime the launch runs as ("" for a one-shot window)
	PaneID    string
	// Given is true when the prompt went with the launch; false when the runtime started
	// without it and it must be delivered live to RuntimeID. The fallback chain never
	// gives a prompt at launch (it would be on the agent's command line, which every
	// local uid reads): its launches all say false.
	Given bool
}

func (s sentinel) Error() string { return string(s) }

// Status is a runtime's state in the seed 001 §9 state machine.
type Status string

const (
	StatusStarting       Status = "starting"
	StatusReady          Status = "ready"
	StatusTriggering     Status = "triggering"
	StatusAwaitingAck    Status = "awaiting_ack"
	StatusRetrying       Status = "retrying"
	StatusFallbackResume Status = "fallback_resume"
	StatusSpawnRecovery  Status = "spawn_recovery"
	StatusFailed         Status = "failed"
	StatusOffline        Status = "offline"
	StatusPaused         Status = "paused"
	StatusDeregistered   Status = "deregistered"
	// StatusExited: the program ended cleanly (exit status 0, or its profile's completion
	// marker was seen): its work is done, so it is not restarted. `nudge restart` revives it.
	StatusExited Status = "exited"
)

// Readiness is what the detector concluded from the pane's screen (seed 002).
type Readiness string

const (
	Ready             Readiness = "READY"
	Busy              Readiness = "BUSY"
	NeedsConfirmation Readiness = "NEEDS_CONFIRMATION"
	ErrorState        Readiness = "ERROR"
	Unknown           Readiness = "UNKNOWN"
)

// TriggerState is a trigger's receipt state.
type TriggerState string

const (
	StateQueued    TriggerState = "queued"
	StateDeferred  TriggerState = "deferred"
	StateInjected  TriggerState = "injected"
	StateSubmitted TriggerState = "submitted"
	StateAcked     TriggerState = "acked"
	StateFailed    TriggerState = "failed"
)

// Final reports whether no further transition can happen to the live delivery.
// A trigger whose live path was abandoned for a resume or spawn launch records that in
// its Fallback field and is closed by its own Closed flag, not by its state.
func (s TriggerState) Final() bool { return s == StateAcked || s == StateFailed }

// Result is the seed 000 §10.2 result word.
type Result string

const (
	ResultDelivered     Result = "delivered"
	ResultAlreadyActive Result = "already_active"
	ResultDeferred      Result = "deferred"
	ResultTimeout       Result = "timeout"
	ResultFailed        Result = "failed"
	// ResultPending is the in-flight word: accepted (queued) or typed (injected) and not yet
	// taken by the agent. The seed has no word for it; an orchestrator treats it as "no
	// outcome yet" and follows the receipt.
	ResultPending Result = "pending"
)

// Backend names how a trigger reached the agent.
const (
	BackendTmux   = "tmux"
	BackendResume = "resume"
	BackendSpawn  = "spawn"
)

// RuntimeID is the id of the runtime with role in workspace ws: rt_WS.ROLE.
func RuntimeID(ws, role string) string { return "rt_" + ws + "." + role }
