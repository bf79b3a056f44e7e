package statusfiles

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/nudgehq/nudge"
)

// ErrSchema is returned for a status file of a schema this reader does not know.
var ErrSchema = errors.New("statusfiles: unknown schema")

// SchemaVersion is the version of the files' shape; a reader refuses a newer one.
const SchemaVersion = 1

// Runtime is one runtime's status file, <state-dir>/workers/<runtime id>/status.json:
// seed 002's status row (state, summary, actions_needed, last_snapshot_hash,
// last_change_ts, last_polled_ts, stable_count) with the runtime's place, and its
// readiness history (seed 002's status_history) for tailing. Times named *_ts are unix
// seconds, as the seed's schema has them; 0 means not known.
type Runtime struct {
	Schema      int       `json:"schema"`
	RuntimeID   string    `json:"id"`
	WorkspaceID string    `json:"workspace_id"`
	Role        string    `json:"role"`
	AgentID     string    `json:"agent_id"`
	Agent       string    `json:"cli_type"` // the profile: codex, claude, shell, ...
	Managed     bool      `json:"managed"`
	TmuxSession string    `json:"tmux_session"`
	TmuxWindow  string    `json:"tmux_window"`
	Target      string    `json:"tmux_target,omitempty"`
	PaneID      string    `json:"pane_id,omitempty"`
	Dir         string    `json:"cwd,omitempty"`
	Status      string    `json:"status"`         // the lifecycle state (seed 001 §9)
	State       string    `json:"state"`          // the readiness: READY, BUSY, NEEDS_CONFIRMATION, ERROR, UNKNOWN
	Summary     string    `json:"summary"`        // the detector's summary (ANSI stripped)
	Actions     []string  `json:"actions_needed"` // what the agent waits for (a dialog's question), [] when none
	Paused      bool      `json:"paused"`         // nudge pause
	Busy        bool      `json:"operator_busy"`  // a human is typing in the pane
	SnapHash    string    `json:"last_snapshot_hash"`
	ChangeTS    int64     `json:"last_change_ts"` // the screen last changed (output, or a capture unlike the one before)
	PolledTS    int64     `json:"last_polled_ts"` // the last capture the detector took
	Stable      int       `json:"stable_count"`   // captures in a row showing the same screen, after the first; 0 since output
	StatusSince time.Time `json:"status_since,omitzero"`
	LastTrigger *Trigger  `json:"last_trigger,omitempty"`
	UpdatedAt   time.Time `json:"updated_at"`
	History     []Entry   `json:"history,omitempty"` // oldest first; the newest Config.History kept (the fleet file has none)
}

// Trigger is a runtime's newest trigger as the status files show it: its id and where it
// stands, never its prompt.
type Trigger struct {
	TriggerID string `json:"trigger_id"`
	State     string `json:"state"`
	Result    string `json:"result,omitempty"`
	ErrorCode string `json:"error_code,omitempty"`
	UpdatedAt int64  `json:"ts"`
}

// Entry is one change of a runtime's lifecycle status or readiness.
type Entry struct {
	TS      int64  `json:"ts"`
	Status  string `json:"status"`
	State   string `json:"state"`
	Summary string `json:"summary,omitempty"`
}

// Fleet is the fleet's status file, <state-dir>/workers/status.json: every runtime's row
// (without its history), and when and by which daemon it was written.
type Fleet struct {
	Schema    int       `json:"schema"`
	WrittenAt time.Time `json:"written_at"`
	DaemonPID int       `json:"daemon_pid"`
	Runtimes  []Runtime `json:"runtimes"`
}

// ReadFleet reads the fleet's status file under stateDir, whether the daemon runs or
// not: a regular file (never a symlink, nor one under a symlinked status directory) of at
// most MaxFileSize bytes, of this schema or an older one.
func ReadFleet(stateDir string) (Fleet, error) {
	var f Fleet
	b, err := readFile(stateDir, "")
	if err != nil {
		return f, err
	}
	if err := decode(b, &f, &f.Schema); err != nil {
		return Fleet{}, err
	}
	return f, nil
}

// ReadRuntime reads one runtime's status file under stateDir, as ReadFleet does.
func ReadRuntime(stateDir, runtimeID string) (Runtime, error) {
	var r Runtime
	b, err := readFile(stateDir, runtimeID)
	if err != nil {
		return r, err
	}
	if err := decode(b, &r, &r.Schema); err != nil {
		return Runtime{}, err
	}
	return r, nil
}

func decode(b []byte, v any, schema *int) error {
	if err := json.Unmarshal(b, v); err != nil {
		return err
	}
	if *schema > SchemaVersion || *schema < 1 {
		return ErrSchema
	}
	return nil
}

// Record is the runtime record r shows (what `nudge status` and `nudge ls` print when the
// daemon does not answer), and its newest trigger if r names one.
func (r Runtime) Record() (nudge.Runtime, *nudge.Trigger) {
	rt := nudge.Runtime{RuntimeID: r.RuntimeID, WorkspaceID: r.WorkspaceID, Role: r.Role, AgentID: r.AgentID, Agent: r.Agent,
		Managed: r.Managed, TmuxSession: r.TmuxSession, TmuxWindow: r.TmuxWindow, Target: r.Target, PaneID: r.PaneID,
		Dir: r.Dir, Status: nudge.Status(r.Status), Readiness: nudge.Readiness(r.State), Summary: r.Summary,
		OperatorBusy: r.Busy, Paused: r.Paused, StatusSince: r.StatusSince, UpdatedAt: r.UpdatedAt}
	if r.LastTrigger == nil {
		return rt, nil
	}
	t := &nudge.Trigger{TriggerID: r.LastTrigger.TriggerID, RuntimeID: r.RuntimeID, WorkspaceID: r.WorkspaceID,
		State: nudge.TriggerState(r.LastTrigger.State), Result: nudge.Result(r.LastTrigger.Result),
		ErrorCode: nudge.Code(r.LastTrigger.ErrorCode)}
	if r.LastTrigger.UpdatedAt != 0 {
		t.UpdatedAt = time.Unix(r.LastTrigger.UpdatedAt, 0)
	}
	return rt, t
}
