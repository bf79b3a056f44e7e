package doctor

// The checks `nudge doctor` makes on this machine only: the daemon, the agent CLIs of the
// known profiles, state and socket permissions, and the override directories.

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/nudgehq/nudge/cmd/nudge/api"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/controlmode"
	"github.com/nudgehq/nudge/detector"
	"github.com/nudgehq/nudge/panes"
)

// doctorTimeout bounds each question doctor asks the daemon or an agent CLI.
const doctorTimeout = 5 * time.Second

// askDaemon asks the daemon for its health and runtimes, and takes the paths it uses in
// place of the defaults (not of the paths the user named). It returns the runtimes and a
// func that prints the daemon's line (printed last, after the checks that use them).
func (d *doctor) askDaemon(ctx context.Context, c *api.Client) (report func(), rts []api.Runtime) {
	if _, err := os.Stat(c.Socket()); errors.Is(err, fs.ErrNotExist) {
		return func() {
			d.say.warn("", "daemon: not running (no socket at %s): start it with `nudge serve`", c.Socket())
		}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, doctorTimeout)
	defer cancel()
	h, err := c.Health(ctx)
	var ae *api.Error
	switch {
	case err == nil:
		paths := d.adopt(h.Paths)
		if err := c.Do(ctx, "GET", "/v1/runtimes", nil, &rts); err != nil {
			return func() {
				d.say.warn("", "daemon %s answers on %s but not with its runtimes: %v", h.Version, c.Socket(), err)
			}, nil
		}
		return func() {
			d.say.ok("", "daemon %s answers on %s: %d runtime(s), up since %s; %s", h.Version, c.Socket(), h.Runtimes,
				h.StartedAt.Local().Format(time.DateTime), paths)
			for _, id := range slices.Sorted(maps.Keys(h.RecordsUnread)) {
				d.say.warn("", "runtime %s: its agent's own record is not read (%s): its acks rest on its screen", id, h.RecordsUnread[id])
			}
		}, rts
	case errors.As(err, &ae) && (ae.ErrorCode == nudge.Unauthorized || ae.ErrorCode == nudge.Forbidden):
		return func() {
			d.say.warn("", "daemon answers on %s but refused this caller (%s): pass --token or set NUDGE_TOKEN", c.Socket(), ae.Message)
		}, nil
	case errors.As(err, &ae) && ae.ErrorCode == nudge.Unavailable:
		return func() {
			d.say.warn("", "daemon: nothing listens on %s (a stale socket from a daemon that stopped; `nudge serve` replaces it)", c.Socket())
		}, nil
	case errors.Is(err, context.DeadlineExceeded):
		return func() {
			d.say.fail("", "daemon on %s did not answer within %s: it is hung or overloaded; see its log, restart it", c.Socket(), doctorTimeout)
		}, nil
	}
	return func() { d.say.fail("", "daemon on %s: %v", c.Socket(), err) }, nil
}

// adopt takes the daemon's paths for every path the user did not name, warns about a
// named one the daemon does not use, and says which paths were checked.
func (d *doctor) adopt(p *api.Paths) string {
	if p == nil {
		return "it did not say which directories it uses (a scoped token, or an older daemon): the defaults and flags were checked"
	}
	d.store, d.storeWarn = p.Store, p.StoreWarnSize
	take := func(what string, mine *string, given bool, theirs string) {
		switch {
		case !given:
			*mine = theirs
		case filepath.Clean(*mine) != filepath.Clean(theirs):
			d.say.warn("", "%s: %s was checked as given, but the daemon uses %s", what, orNone(*mine), orNone(theirs))
		}
	}
	take("state dir", &d.stateDir, d.given.StateDir, p.StateDir)
	take("profile overrides", &d.profileDir, d.given.ProfileDir, p.ProfileDir)
	take("pack overrides", &d.packDir, d.given.PackDir, p.PackDir)
	return "its own state dir and override directories were checked"
}

func orNone(dir string) string {
	if dir == "" {
		return "none"
	}
	return dir
}

// overrides checks the profile and pack override directories (a file that does not parse
// stops serve) and that every profile's pack exists.
func (d *doctor) overrides() {
	profiles, perr := panes.LoadProfiles(d.profileDir)
	if perr != nil {
		d.say.fail("", "profile overrides: %v: fix or remove it (serve will not start)", perr)
	} else {
		d.say.ok("", "profile overrides: %s", ProfileOverrides(d.profileDir, profiles))
	}
	packs, err := detector.LoadPacks(d.packDir)
	if err != nil {
		d.say.fail("", "pack overrides: %v: fix or remove it (serve will not start)", err)
		return
	}
	d.say.ok("", "pack overrides: %s", PackOverrides(d.packDir, packs))
	if perr == nil {
		for _, name := range MissingPacks(profiles, packs) {
			p := profiles[name]
			d.say.warn("", "profile %s uses pack %q, which does not exist: its screen is never classified; add %s.json to %s or set \"pack\"",
				name, p.Pack, p.Pack, d.packDir)
		}
	}
}

// agents checks that the program each known profile launches is on PATH: a missing one is a
// warning (nobody needs every agent) unless a runtime runs it (then host already failed it).
func (d *doctor) agents(ctx context.Context, inUse []string) {
	builtin, _ := panes.LoadProfiles("")
	profiles, err := panes.LoadProfiles(d.profileDir)
	if err != nil { // overrides says why
		profiles = builtin
	}
	known := map[string]bool{} // programs doctor may run with --version: the built-in agents'
	for _, p := range builtin {
		known[p.Launch[0]] = true
	}
	byProgram := map[string][]string{}
	for name, p := range profiles {
		if len(p.Launch) > 0 {
			byProgram[p.Launch[0]] = append(byProgram[p.Launch[0]], name)
		}
	}
	progs := make([]string, 0, len(byProgram))
	for p := range byProgram {
		progs = append(progs, p)
	}
	slices.Sort(progs)
	for _, prog := range progs {
		if slices.Contains(inUse, prog) {
			continue
		}
		names := byProgram[prog]
		slices.Sort(names)
		which := "profile " + strings.Join(names, ", ")
		path, err := exec.LookPath(prog)
		if err != nil {
			d.say.warn("", "agent %s (%s) is not on PATH: install it, or ignore this if you do not use it", prog, which)
			continue
		}
		if v := programVersion(ctx, path, known[prog]); v != "" {
			d.say.ok("", "agent %s (%s): %s, %s", prog, which, path, v)
		} else {
			d.say.ok("", "agent %s (%s): %s", prog, which, path)
		}
	}
}

// programVersion is the version of the program at path where it is cheap to learn: an npm
// package's package.json, else, if run (a built-in agent's program: a user's own is never
// run), the first line of `path --version` within a short deadline. "" when neither says.
func programVersion(ctx context.Context, path string, run bool) string {
	if v := npmVersion(path); v != "" || !run {
		return v
	}
	ctx, cancel := context.WithTimeout(ctx, doctorTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "--version")
	cmd.Env = controlmode.ChildEnv(os.Environ())
	cmd.WaitDelay = time.Second
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	first, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	if len(first) > 80 {
		first = first[:80]
	}
	return strings.TrimSpace(first)
}

// npmVersion reads the version of the npm package a bin link (node_modules/.bin/x, or a
// global bin symlink into node_modules) belongs to.
func npmVersion(path string) string {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return ""
	}
	parts := strings.Split(real, string(filepath.Separator))
	i := slices.Index(parts, "node_modules")
	for j := i + 1; i >= 0 && j < len(parts); j++ { // the last node_modules wins
		if parts[j] == "node_modules" {
			i = j
		}
	}
	if i < 0 || i+1 >= len(parts) {
		return ""
	}
	pkg := parts[:i+2]
	if strings.HasPrefix(parts[i+1], "@") && i+2 < len(parts) {
		pkg = parts[:i+3]
	}
	b, err := os.ReadFile(string(filepath.Separator) + filepath.Join(append(pkg, "package.json")...))
	if err != nil {
		return ""
	}
	var m struct {
		Name, Version string
	}
	if json.Unmarshal(b, &m) != nil || m.Version == "" {
		return ""
	}
	return m.Name + " " + m.Version
}

// permissions checks that the state directory, the files in it and the API socket are
// private to this user: a store or key others can read leaks every prompt and every token.
func (d *doctor) permissions(socket string) {
	d.privateDir("state dir", d.stateDir)
	var private []string
	if entries, err := os.ReadDir(d.stateDir); err == nil {
		for _, e := range entries {
			if e.Type().IsRegular() && d.privateFile(filepath.Join(d.stateDir, e.Name())) {
				private = append(private, e.Name())
			}
		}
	}
	if len(private) > 0 {
		d.say.ok("", "state files mode 0600, yours: %s", strings.Join(private, ", "))
	}
	if d.store != "" && filepath.Dir(d.store) != filepath.Clean(d.stateDir) && d.privateFile(d.store) {
		d.say.ok("", "store %s: mode 0600, yours", d.store)
	}
	dir := filepath.Dir(socket)
	if dir != filepath.Clean(d.stateDir) {
		d.privateDir("socket dir", dir)
	}
	fi, err := os.Lstat(socket)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return // the daemon line says so
	case err != nil:
		d.say.fail("", "socket %s: %v", socket, err)
	case fi.Mode()&fs.ModeSocket == 0:
		d.say.fail("", "socket %s is not a socket (%s): remove it, or give serve another --socket", socket, fi.Mode().Type())
	case d.privateFile(socket):
		d.say.ok("", "socket %s: mode 0600, yours", socket)
	}
}

// privateDir checks that dir is a directory of this user's that nobody else can enter.
func (d *doctor) privateDir(what, dir string) {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		d.say.ok("", "%s %s does not exist yet (nudge serve creates it 0700)", what, dir)
	case err != nil:
		d.say.fail("", "%s %s: %v", what, dir, err)
	case !fi.IsDir():
		d.say.fail("", "%s %s is not a directory: move it away", what, dir)
	case fi.Mode()&fs.ModeSticky != 0 && fi.Mode().Perm()&0o002 != 0:
		// A shared directory such as /tmp: others see the socket's name, not more.
		d.say.warn("", "%s %s is shared (mode %s): prefer a directory of your own (the default: $XDG_RUNTIME_DIR/nudge)", what, dir, fi.Mode().Perm())
	case !ownedByMe(fi):
		d.say.fail("", "%s %s is owned by uid %d, not you (uid %d): chown it, or use a directory of your own", what, dir, owner(fi), os.Getuid())
	case fi.Mode().Perm()&0o077 != 0:
		d.say.fail("", "%s %s has mode %04o, others can reach into it: chmod 700 %s", what, dir, fi.Mode().Perm(), dir)
	default:
		d.say.ok("", "%s %s: mode 0700, yours", what, dir)
	}
}

// privateFile reports false (and fails the check) unless path is this user's and mode 0600
// or stricter.
func (d *doctor) privateFile(path string) bool {
	fi, err := os.Lstat(path)
	switch {
	case err != nil:
		d.say.fail("", "%s: %v", path, err)
	case !ownedByMe(fi):
		d.say.fail("", "%s is owned by uid %d, not you (uid %d): chown it", path, owner(fi), os.Getuid())
	case fi.Mode().Perm()&0o077 != 0:
		d.say.fail("", "%s has mode %04o, others can read or write it: chmod 600 %s", path, fi.Mode().Perm(), path)
	default:
		return true
	}
	return false
}

func owner(fi fs.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}

func ownedByMe(fi fs.FileInfo) bool {
	o := owner(fi)
	return o == -1 || o == os.Getuid()
}
