package panes

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/nudgehq/nudge"
)

// Naming (seed 001 §4): session agents_<ws>, window <role>, pane 0, target
// agents_<ws>:<role>.0. Workspaces may not hold '.', because tmux rewrites '.' and ':' in
// session names to '_' (so "a.b" and "a_b" would share a session).
var (
	workspaceRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	roleRE      = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)
)

// SessionPrefix starts every workspace's tmux session name.
const SessionPrefix = "agents_"

func badRequest(format string, args ...any) *nudge.Error {
	return nudge.NewError(nudge.BadRequest, fmt.Sprintf(format, args...))
}

// ValidWorkspace checks a workspace name: [A-Za-z0-9_-]{1,64}.
func ValidWorkspace(ws string) error {
	if !workspaceRE.MatchString(ws) {
		return badRequest("invalid workspace %q: want 1-64 of [A-Za-z0-9_-]", ws)
	}
	return nil
}

// ValidRole checks a role (window) name: [A-Za-z0-9_.-]{1,64}, not "." or "..".
func ValidRole(role string) error {
	if !roleRE.MatchString(role) || role == "." || role == ".." {
		return badRequest("invalid role %q: want 1-64 of [A-Za-z0-9_.-]", role)
	}
	return nil
}

func validName(name string) error {
	if err := ValidRole(name); err != nil {
		return fmt.Errorf("invalid name %q", name)
	}
	return nil
}

// SessionName is the tmux session of a workspace.
func SessionName(ws string) string { return SessionPrefix + ws }

// TargetString is the seed 001 target string session:window.pane.
func TargetString(ws, role string, pane int) string {
	return SessionName(ws) + ":" + role + "." + strconv.Itoa(pane)
}

// RuntimeID is the stable id of a workspace's role. Workspaces hold no '.', so the first
// '.' separates the two parts unambiguously.
func RuntimeID(ws, role string) string { return nudge.RuntimeID(ws, role) }

// Target is a parsed register target: either a pane id (%N) or session:window.pane.
type Target struct {
	PaneID  string // "%N" when given by id
	Session string
	Window  string // "" for a session alone (its active window's active pane)
	Pane    int
}

// ParseTarget parses "%N", "SESSION:WINDOW.PANE" or "SESSION" (the session's active
// pane). The window is split from the pane at the last '.', so windows may hold dots.
func ParseTarget(s string) (Target, error) {
	if strings.HasPrefix(s, "%") {
		if _, err := strconv.ParseUint(s[1:], 10, 31); err != nil || s[1:] == "" || s[1] == '+' {
			return Target{}, badRequest("invalid target %q: a pane id is %%N with N a number", s)
		}
		return Target{PaneID: s}, nil
	}
	sess, rest, ok := strings.Cut(s, ":")
	if !ok && s != "" && !strings.ContainsAny(s, ".") {
		return Target{Session: s}, nil // a session alone: its active pane
	}
	i := strings.LastIndexByte(rest, '.')
	if !ok || sess == "" || i <= 0 || i == len(rest)-1 {
		return Target{}, badRequest("invalid target %q: want SESSION:WINDOW.PANE or %%N", s)
	}
	pane, err := strconv.Atoi(rest[i+1:])
	if err != nil || pane < 0 || strings.ContainsAny(rest[i+1:], "+-") {
		return Target{}, badRequest("invalid target %q: pane index must be a number", s)
	}
	return Target{Session: sess, Window: rest[:i], Pane: pane}, nil
}

func (t Target) String() string {
	if t.PaneID != "" {
		return t.PaneID
	}
	if t.Window == "" {
		return t.Session
	}
	return t.Session + ":" + t.Window + "." + strconv.Itoa(t.Pane)
}
