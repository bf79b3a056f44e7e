package panes

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/nudgehq/nudge"
)

// SpawnRequest asks for a new managed runtime.
type SpawnRequest struct {
	Workspace, Role string
	Agent           string   // profile name; "" means "codex"
	AgentID         string   // "" means Role
	Dir             string   // must lie under Config.Roots; "" means the first root (or tmux's default)
	SessionID       string   // the agent's session id, if known
	PromptFile      string   // a first prompt read from this file (never through a shell)
	Prompt          string   // a first prompt (when PromptFile is empty)
	Argv            []string // explicit argv; its program must be allowed by the profile
	Host            string   // ssh destination of the workspace's tmux; "" means the workspace's host (local for a new one)
}

// launcher starts programs in panes: it checks names, directories and argv (launcher
// policy, launcher.go), spawns and adopts runtimes, restarts and relaunches them (the old
// program ended first by the ender) and runs the fallback chain's launches (launch.go,
// fallback.go). It has no state of its own (the records hold what it notes about each
// runtime) and starts no goroutine: an automatic restart runs on the reconciler's.
type launcher struct {
	cfg   *Config
	stats *Stats
	recs  *records
	conns *conns
	tmux  *tmuxClient
	ender *ender
}

// MaxPromptFile bounds a --prompt-file.
const MaxPromptFile = 1 << 20

// spawn is Registry.Spawn.
func (l *launcher) spawn(ctx context.Context, req SpawnRequest) (nudge.Runtime, error) {
	defer l.recs.db.Flush() // durable when it returns
	rt, argv, prompt, err := l.prepareSpawn(req)
	if err != nil {
		return nudge.Runtime{}, err
	}
	if rt.Host, err = l.conns.bindHost(req.Workspace, req.Host); err != nil {
		return nudge.Runtime{}, err
	}
	if argv, err = l.withChannel(&rt, req, argv); err != nil {
		return nudge.Runtime{}, err
	}
	if err := l.recs.reserve(rt.RuntimeID, "spawning"); err != nil {
		return nudge.Runtime{}, err
	}
	defer l.recs.release(rt.RuntimeID)
	p, err := l.newWindow(ctx, &rt, argv)
	if err != nil {
		return nudge.Runtime{}, err
	}
	setPane(&rt, p)
	rt, err = l.recorded(l.recs.record(rt, "runtime_spawned", map[string]any{"argv": rt.Argv, "dir": rt.Dir, "pid": rt.PID}))
	if err == nil && prompt != "" {
		nudge.Publish(l.cfg.Bus, nudge.FirstPrompt{Runtime: rt, Prompt: prompt})
	}
	return rt, err
}

// prepareSpawn validates a request and builds the record, the launch argv and the first
// prompt. The prompt never goes on the argv, where every local uid reads it (ps,
// /proc/PID/cmdline): it is published (nudge.FirstPrompt) to the trigger pipeline, which types
// it into the agent once it is ready. A profile that takes no prompt at launch
// (PromptArg "") still refuses one.
func (l *launcher) prepareSpawn(req SpawnRequest) (rt nudge.Runtime, argv []string, prompt string, err error) {
	prof, err := l.checkNames(req.Workspace, req.Role, &req.Agent)
	if err != nil {
		return nudge.Runtime{}, nil, "", err
	}
	if req.SessionID != "" && !prof.ValidSessionID(req.SessionID) {
		return nudge.Runtime{}, nil, "", badRequest("invalid session id %q", req.SessionID)
	}
	dir, err := l.resolveDir(req.Dir)
	if err != nil {
		return nudge.Runtime{}, nil, "", err
	}
	if prompt, err = l.readPromptFile(req.PromptFile); err != nil {
		return nudge.Runtime{}, nil, "", err
	}
	if prompt == "" {
		prompt = req.Prompt
	}
	argv, err = prof.LaunchArgv(req.Argv, "")
	if err != nil {
		return nudge.Runtime{}, nil, "", badRequest("%v", err)
	}
	if prompt != "" {
		if _, err := prof.LaunchArgv(req.Argv, prompt); err != nil {
			return nudge.Runtime{}, nil, "", badRequest("%v", err)
		}
		if l.cfg.Bus == nil {
			return nudge.Runtime{}, nil, "", badRequest("a first prompt needs the trigger pipeline (none is wired to this registry)")
		}
		if l.cfg.CheckPrompt != nil {
			if err := l.cfg.CheckPrompt(prompt); err != nil {
				return nudge.Runtime{}, nil, "", err
			}
		}
	}
	rt = l.newRecord(req.Workspace, req.Role, req.Agent, req.AgentID)
	rt.SessionID, rt.Dir, rt.Argv, rt.Managed = req.SessionID, dir, slices.Clone(argv), true
	if prof.SessionIDFlag != "" && req.SessionID == "" && len(req.Argv) == 0 {
		// A new session named at launch (the base argv, for a later fresh start, keeps none).
		rt.SessionID = newSessionID()
		argv = slices.Insert(argv, 1, prof.SessionIDFlag, rt.SessionID)
	}
	return rt, argv, prompt, nil
}

// withChannel adds the flag that opens the agent's channel to the argv of a spawn of rt
// on this machine with its profile's own launch (bound to its host: rt.Host is known).
// The channel's version check runs the program (--version): only the launcher every
// launch is held to (resolveArgv), never what the daemon's PATH finds first, which may be
// a program an agent planted in its workspace.
func (l *launcher) withChannel(rt *nudge.Runtime, req SpawnRequest, argv []string) ([]string, error) {
	prof := l.cfg.Profiles[rt.Agent]
	if len(req.Argv) > 0 || len(argv) == 0 || prof.ChannelFlag == "" || rt.Host != "" {
		return argv, nil
	}
	resolved, err := l.resolveArgv(rt, argv)
	if err != nil {
		return nil, err
	}
	if extra := l.channelArgs(prof, rt.RuntimeID, resolved[0], argv); extra != nil {
		argv = slices.Insert(slices.Clone(argv), 1, extra...)
	}
	return argv, nil
}

// newSessionID is a random (version 4) UUID.
func newSessionID() string {
	var b [16]byte
	rand.Read(b[:]) //nolint:errcheck // crypto/rand.Read never fails
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// checkNames validates workspace, role and profile ("" means codex).
func (l *launcher) checkNames(ws, role string, agent *string) (Profile, error) {
	if err := ValidWorkspace(ws); err != nil {
		return Profile{}, err
	}
	if err := ValidRole(role); err != nil {
		return Profile{}, err
	}
	if *agent == "" {
		*agent = "codex"
	}
	prof, ok := l.cfg.Profiles[*agent]
	if !ok {
		names := make([]string, 0, len(l.cfg.Profiles))
		for n := range l.cfg.Profiles {
			names = append(names, n)
		}
		sort.Strings(names)
		return Profile{}, badRequest("unknown agent profile %q%s; the profiles: %s", *agent,
			nudge.Suggest(*agent, names), strings.Join(names, ", "))
	}
	return prof, nil
}

func (l *launcher) newRecord(ws, role, agent, agentID string) nudge.Runtime {
	if agentID == "" {
		agentID = role
	}
	now := l.cfg.Now()
	return nudge.Runtime{RuntimeID: RuntimeID(ws, role), WorkspaceID: ws, Role: role, AgentID: agentID,
		Agent: agent, TmuxSession: SessionName(ws), TmuxWindow: role, Target: TargetString(ws, role, 0),
		Status: nudge.StatusStarting, Readiness: nudge.Unknown,
		CreatedAt: now, UpdatedAt: now, StatusSince: now}
}

// readPromptFile reads a spawn's first prompt from a file under the allowed roots.
func (l *launcher) readPromptFile(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	path, err := l.resolvePromptFile(path)
	if err != nil {
		return "", err
	}
	b, err := readRegularFile(path, MaxPromptFile)
	if err != nil {
		return "", badRequest("read prompt file: %v", err)
	}
	if len(b) > MaxPromptFile || slices.Contains(b, 0) {
		return "", badRequest("prompt file %s: larger than %d bytes or holds NUL", path, MaxPromptFile)
	}
	return strings.TrimSuffix(string(b), "\n"), nil
}

// recorded wakes the workspace of a runtime just recorded: dial its new session and
// reconcile at once.
func (l *launcher) recorded(rt nudge.Runtime, err error) (nudge.Runtime, error) {
	if err == nil {
		l.conns.wake(rt.WorkspaceID)
	}
	return rt, err
}

// envArgs returns -e KEY=VAL flags for the profile's and Config.Env's variables.
func (l *launcher) envArgs(rt *nudge.Runtime) ([]string, error) {
	vars := slices.Clone(l.cfg.Profiles[rt.Agent].Env)
	if l.cfg.Env != nil {
		vars = append(vars, l.cfg.Env(*rt)...)
	}
	vars = append(vars, l.openCodeEnv(rt)...)
	var out []string
	for _, kv := range vars {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || !envKeyRE.MatchString(k) || strings.ContainsRune(kv, 0) {
			return nil, fmt.Errorf("bad environment entry for %s: %q", rt.RuntimeID, k)
		}
		out = append(out, "-e", kv)
	}
	return out, nil
}

// launchArgs are the flags and command shared by new-session, new-window and
// respawn-pane: -c DIR, -e KEY=VAL..., then `-- env [-u NAME]... ARGV...` (the profile's
// UnsetEnv). The argv always has at least two elements, so tmux execs it directly instead
// of through sh -c.
func (l *launcher) launchArgs(rt *nudge.Runtime, argv []string) ([]string, error) {
	argv, err := l.resolveArgv(rt, argv) // every launch, relaunches included, re-checks
	if err != nil {
		return nil, err
	}
	env, err := l.envArgs(rt)
	if err != nil {
		return nil, err
	}
	var args []string
	if rt.Dir != "" {
		args = append(args, "-c", rt.Dir)
	}
	args = append(args, env...)
	args = append(args, "--", "env")
	for _, k := range l.cfg.Profiles[rt.Agent].UnsetEnv {
		args = append(args, "-u", k)
	}
	return append(args, argv...), nil
}

const newPaneFormat = "#{pane_id} #{pane_pid} #{pane_index} #{window_index}"

// newWindow starts argv in a new window named after the role (creating the session if
// missing), detached, with remain-on-exit set in the same tmux command list so even an
// instant exit is kept. tmux chooses the window's index, so spawns at once never take
// the same one; a race for the session is retried.
func (l *launcher) newWindow(ctx context.Context, rt *nudge.Runtime, argv []string) (paneInfo, error) {
	launch, err := l.launchArgs(rt, argv)
	if err != nil {
		return paneInfo{}, nudge.NewError(nudge.SpawnFailed, err.Error())
	}
	var lastErr error
	for range 5 {
		p, err := l.tryNewWindow(ctx, rt, launch)
		if err == nil || !retryable(err) {
			return p, err
		}
		lastErr = err
	}
	return paneInfo{}, spawnFailed(lastErr)
}

func (l *launcher) tryNewWindow(ctx context.Context, rt *nudge.Runtime, launch []string) (paneInfo, error) {
	if at := placeOf(rt); !at.owned(rt.WorkspaceID) {
		return paneInfo{}, nudge.NewError(nudge.SpawnFailed, fmt.Sprintf("the pane of %s is gone from the user's %s, where nudge opens no window: "+
			"start the agent there again and register its pane (nudge register)", rt.RuntimeID, at))
	}
	sess := SessionName(rt.WorkspaceID)
	out, err := l.tmux.pastEnd(ctx, serverOf(rt), "list-windows", "-t", "="+sess, "-F", "#{window_index} #{window_name}")
	if isMissing(err) {
		args := append([]string{"new-session", "-d", "-s", sess, "-n", rt.Role, "-P", "-F", newPaneFormat}, launch...)
		args = append(args, ";", "set-option", "-p", "-t", "="+sess+":", "remain-on-exit", "on")
		return l.startPane(ctx, rt, args)
	}
	if err != nil {
		return paneInfo{}, spawnFailed(err)
	}
	for _, line := range splitLines(out) {
		if _, name, _ := strings.Cut(line, " "); name == rt.Role {
			return paneInfo{}, nudge.NewError(nudge.Conflict, fmt.Sprintf("window %q already exists in %s", name, sess))
		}
	}
	// tmux takes the next free index; a name of its own lets the same command list set
	// remain-on-exit on the new pane before its program can exit, then name it for the role.
	tmp := "nudge-new-" + strconv.FormatInt(l.cfg.Now().UnixNano()%1e9, 36)
	win := "=" + sess + ":" + tmp
	args := append([]string{"new-window", "-d", "-t", "=" + sess + ":", "-n", tmp, "-P", "-F", newPaneFormat}, launch...)
	args = append(args, ";", "set-option", "-p", "-t", win, "remain-on-exit", "on", ";", "rename-window", "-t", win, rt.Role)
	return l.startPane(ctx, rt, args)
}

func (l *launcher) startPane(ctx context.Context, rt *nudge.Runtime, args []string) (paneInfo, error) {
	out, err := l.tmux.pastEnd(ctx, serverOf(rt), args...)
	if err != nil {
		return paneInfo{}, err
	}
	f := strings.Fields(out)
	if len(f) != 4 || !strings.HasPrefix(f[0], "%") {
		return paneInfo{}, nudge.NewError(nudge.SpawnFailed, fmt.Sprintf("unexpected tmux reply %q", out))
	}
	p := paneInfo{ID: f[0], Session: SessionName(rt.WorkspaceID), Window: rt.Role}
	p.PID, _ = strconv.Atoi(f[1])
	p.Index, _ = strconv.Atoi(f[2])
	p.WindowIndex, _ = strconv.Atoi(f[3])
	return p, nil
}

// retryable: the session appeared or the index was taken between our two commands.
// "server exited unexpectedly" is a tmux client that started a server at the moment
// another client did (nudge's restart of a runtime and a spawn, after the server died):
// the losing server exits; the winner is there for the retry.
func retryable(err error) bool {
	var te *tmuxError
	return errors.As(err, &te) && (strings.Contains(te.Stderr, "duplicate session") ||
		strings.Contains(te.Stderr, "in use") || strings.Contains(te.Stderr, "can't find") ||
		strings.Contains(te.Stderr, "server exited unexpectedly"))
}

func spawnFailed(err error) error {
	var ne *nudge.Error
	if errors.As(err, &ne) {
		return err
	}
	return &wrapped{nudge.NewError(nudge.SpawnFailed, err.Error()), err}
}

// readRegularFile reads at most max+1 bytes of path, which must still be the regular file
// that was checked: it is opened without following a last symlink and without blocking (a
// FIFO or a device swapped in after the check would hold the reader or never end), and
// refused unless the open file is regular.
func readRegularFile(path string, max int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	return io.ReadAll(io.LimitReader(f, max+1))
}
