package panes

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nudgehq/nudge"
)

// Launchers. A runtime's argv[0] is resolved to an absolute path before every launch
// (spawn, restart, reconciliation's relaunch, a fallback's resume or spawn) and the pane
// runs that path, so what runs is the file that was checked: not whatever an agent
// planted under the same name in its workspace or put first on a PATH.

// LauncherRule says which programs may start a runtime.
type LauncherRule struct {
	// Allowed: names (resolved through Path) or absolute paths; "*" allows any program
	// outside Dirs. A program is allowed when it is the same file (symlinks resolved) as
	// an entry resolves to.
	Allowed []string
	// Named: absolute paths allowed even inside Dirs (the workspace policy names them).
	Named []string
	// Dirs are workspace directories (the spawn directory, the policy's dirs): agents
	// write there, so a program inside one is refused unless Named names it.
	Dirs []string
	// Path is the PATH names are resolved through; "" means the daemon's.
	Path string
	// Cwd is what a relative argv[0] is relative to (the pane's directory).
	Cwd string
}

// SelfLauncher is the launch word that runs Config.Self, the daemon's own binary.
const SelfLauncher = "nudge"

// ErrLauncherRefused: argv[0] does not resolve to an allowed launcher.
var ErrLauncherRefused = errors.New("launcher refused")

// ResolveLauncher resolves prog (an argv[0]) the way the pane would run it and checks it
// against rule. It returns the absolute path to run.
func ResolveLauncher(prog string, rule LauncherRule) (string, error) {
	refuse := func(format string, args ...any) (string, error) {
		return "", fmt.Errorf("%w: %s", ErrLauncherRefused, fmt.Sprintf(format, args...))
	}
	if prog == "" || strings.ContainsAny(prog, "=\x00") {
		return refuse("%q is not a program", prog)
	}
	path := rule.Path
	if path == "" {
		path = os.Getenv("PATH")
	}
	abs := prog
	switch {
	case filepath.IsAbs(prog):
	case strings.Contains(prog, "/"):
		if rule.Cwd == "" {
			return refuse("relative launcher %q without a directory", prog)
		}
		abs = filepath.Join(rule.Cwd, prog)
	default:
		found, ok := lookPath(prog, path)
		if !ok {
			return refuse("%q is not an executable on the daemon's PATH", prog)
		}
		abs = found
	}
	abs = filepath.Clean(abs)
	real, err := filepath.EvalSymlinks(abs)
	if err != nil || !executable(real) {
		return refuse("%s is not an executable file", abs)
	}
	for _, n := range rule.Named {
		if filepath.IsAbs(n) && sameFile(real, n) {
			return abs, nil
		}
	}
	for _, d := range rule.Dirs {
		if d == "" {
			continue
		}
		rd, err := filepath.EvalSymlinks(d)
		if err != nil {
			rd = d
		}
		if within(filepath.Clean(d), abs) || within(filepath.Clean(rd), real) {
			return refuse("%s is inside the workspace directory %s (a workspace policy must name it by absolute path)", abs, d)
		}
	}
	for _, a := range rule.Allowed {
		switch {
		case a == "*":
			return abs, nil
		case filepath.IsAbs(a):
			if sameFile(real, a) {
				return abs, nil
			}
		default:
			if p, ok := lookPath(a, path); ok && sameFile(real, p) {
				return abs, nil
			}
		}
	}
	return refuse("%s is none of the allowed launchers (%s; names as found on the daemon's PATH)", abs, strings.Join(rule.Allowed, ", "))
}

// lookPath finds name in the directories of path, as execvp does (empty entries and
// relative ones are skipped: they would depend on the pane's directory).
func lookPath(name, path string) (string, bool) {
	for _, dir := range filepath.SplitList(path) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, name)
		if real, err := filepath.EvalSymlinks(p); err == nil && executable(real) {
			return p, true
		}
	}
	return "", false
}

func executable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// sameFile reports whether a and b are the same file once symlinks are resolved.
func sameFile(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	rb, err := filepath.EvalSymlinks(b)
	if err != nil {
		return false
	}
	fb, err := os.Stat(rb)
	return err == nil && os.SameFile(fa, fb)
}

// launcherRule is the rule for rt's launches: its profile's launchers (its own launch
// program included), the workspace policy's, its directory.
func (l *launcher) launcherRule(rt *nudge.Runtime) LauncherRule {
	prof := l.cfg.Profiles[rt.Agent]
	rule := LauncherRule{Allowed: slices.Clone(prof.AllowedLaunchers), Cwd: rt.Dir, Dirs: []string{rt.Dir}}
	if len(prof.Launch) > 0 {
		rule.Allowed = append(rule.Allowed, prof.Launch[0])
	}
	if l.cfg.LaunchPolicy != nil {
		launchers, dirs := l.cfg.LaunchPolicy(rt.WorkspaceID)
		rule.Named = launchers
		rule.Dirs = append(rule.Dirs, dirs...)
	}
	return rule
}

// resolveArgv returns argv with argv[0] resolved and checked for rt. On another host
// (rt.Host) the program is that host's: it is left to the remote PATH.
func (l *launcher) resolveArgv(rt *nudge.Runtime, argv []string) ([]string, error) {
	if len(argv) == 0 || rt.Host != "" {
		return argv, nil
	}
	rule := l.launcherRule(rt)
	if argv[0] == SelfLauncher && l.cfg.Self != "" {
		argv = append([]string{l.cfg.Self}, argv[1:]...)
		rule.Allowed = append(rule.Allowed, l.cfg.Self)
	}
	prog, err := ResolveLauncher(argv[0], rule)
	if err != nil {
		return nil, nudge.NewError(nudge.SpawnFailed, fmt.Sprintf("runtime %s: %v", rt.RuntimeID, err))
	}
	out := slices.Clone(argv)
	out[0] = prog
	return out, nil
}
