package panes

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"

	"github.com/nudgehq/nudge"
)

// A workspace's panes live in one place: a tmux server (on a host) and a session on it.
// By default that is nudge's own server (Config.SocketName/SocketPath) and the session
// agents_<ws>, which nudge creates, fills with windows and owns. A register may instead
// bind a workspace that has no runtimes yet to a pane of the user's own session on the
// user's own server (seed 004: `tmux new -s consilio-ps` on the default server): nudge
// then drives that pane (control connection attached to that session, triggers, key
// watch) but never creates, renames or kills that session or server, and spawns nothing
// there. The binding is kept in the runtimes' records (Host, TmuxSocket, TmuxSession), so
// it survives a daemon restart.

// server names one tmux server: the host it runs on ("" this machine) and its socket:
// "" for nudge's own server as configured, else a socket name (tmux -L NAME) or an
// absolute socket path (tmux -S PATH).
type server struct {
	host   string
	socket string
}

func serverOf(rt *nudge.Runtime) server { return server{rt.Host, rt.TmuxSocket} }

// place is a server and a session on it.
type place struct {
	server
	session string
}

// placeOf is where rt's pane lives.
func placeOf(rt *nudge.Runtime) place {
	return place{serverOf(rt), cmp.Or(rt.TmuxSession, SessionName(rt.WorkspaceID))}
}

// UsersPane reports whether rt's pane lies outside nudge's own session of its workspace:
// a pane of the user's own session (seed 004, registered), on the user's server or on
// nudge's. Its program is the user's (typically the shell the agent was started from):
// a fallback never ends or replaces it (the chain keeps the pane; RelaunchWith refuses).
func UsersPane(rt nudge.Runtime) bool { return !placeOf(&rt).owned(rt.WorkspaceID) }

// owned reports whether p is nudge's own session of workspace ws on nudge's own server:
// the only place nudge creates sessions and windows in.
func (p place) owned(ws string) bool { return p.socket == "" && p.session == SessionName(ws) }

func (p place) String() string {
	s := "session " + p.session + " on tmux server " + socketLabel(p.socket)
	if p.host != "" {
		s += " on host " + p.host
	}
	return s
}

// socketLabel names a socket for people.
func socketLabel(socket string) string {
	if socket == "" {
		return "nudge's own"
	}
	return strconv.Quote(socket)
}

var socketNameRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$`)

// normSocket checks the tmux server a register names (a socket name or an absolute
// socket path) and returns it as the records keep it: "" when it is nudge's own server.
func normSocket(cfg *Config, s string) (string, error) {
	switch {
	case s == "":
		return "", nil
	case filepath.IsAbs(s):
		s = filepath.Clean(s)
		if len(s) > 100 || !validPath(s) {
			return "", badRequest("invalid tmux socket path %q: an absolute path of at most 100 printable bytes", s)
		}
		if cfg.SocketPath != "" {
			if own, err := filepath.Abs(cfg.SocketPath); err == nil && own == s {
				return "", nil
			}
		}
		return s, nil
	case !socketNameRE.MatchString(s) || s == "." || s == "..":
		return "", badRequest("invalid tmux socket %q: a socket name (tmux -L NAME; \"default\" is the server a plain `tmux` uses) of 1-64 of [A-Za-z0-9_.-] not starting with - or ., or an absolute socket path (tmux -S PATH)", s)
	case cfg.SocketPath == "" && s == cfg.SocketName:
		return "", nil
	}
	return s, nil
}

func validPath(s string) bool {
	for _, c := range s {
		if c < ' ' || c == 0x7f {
			return false
		}
	}
	return true
}

// socketArgs are the tmux flags that select a server: the socket's, or nudge's own.
func socketArgs(cfg *Config, socket string) []string {
	name, path := socketFlags(cfg, socket)
	if path != "" {
		return []string{"-S", path}
	}
	if name != "" {
		return []string{"-L", name}
	}
	return nil
}

// socketFlags are the -L name and -S path of a socket ("" nudge's own server).
func socketFlags(cfg *Config, socket string) (name, path string) {
	switch {
	case socket == "":
		return cfg.SocketName, cfg.SocketPath
	case filepath.IsAbs(socket):
		return "", socket
	}
	return socket, ""
}

// localSocketPath is the path of a local tmux server's socket as tmux names it in a
// pane's TMUX: -S PATH, else $TMUX_TMPDIR (or /tmp) resolved, then tmux-UID/NAME.
func localSocketPath(cfg *Config, socket string) string {
	name, path := socketFlags(cfg, socket)
	if path != "" {
		p, _ := filepath.Abs(path)
		return p
	}
	base := os.Getenv("TMUX_TMPDIR")
	if base == "" {
		base = "/tmp"
	}
	if real, err := filepath.EvalSymlinks(base); err == nil {
		base = real
	}
	return filepath.Join(base, "tmux-"+strconv.Itoa(os.Getuid()), name)
}

// A server is known by what it is, not by how a caller spells it: a socket path, a
// symlink or a hard link to it, or the path with "//" or "/./" in it all name one local
// server. sameServer compares two by the socket file they reach (os.SameFile); a
// register also compares a server's pid with nudge's own (launcher.identify), so a
// spelling of nudge's own server is that server, with its other-workspace check.

// sameServer reports whether a and b are one tmux server: the same spelling, or, both on
// this machine, the same socket file.
func sameServer(cfg *Config, a, b server) bool {
	if a == b {
		return true
	}
	if a.host != "" || b.host != "" {
		return false
	}
	fa, errA := os.Stat(localSocketPath(cfg, a.socket))
	fb, errB := os.Stat(localSocketPath(cfg, b.socket))
	return errA == nil && errB == nil && os.SameFile(fa, fb)
}

// foreignSocket refuses a local tmux server socket that is not a socket, or that another
// uid owns: nudge drives only its own uid's servers (a root daemon's tmux would attach to
// any). A socket that does not exist passes: tmux then finds no server there.
func foreignSocket(cfg *Config, socket string) error {
	path := localSocketPath(cfg, socket)
	fi, err := os.Stat(path) // following links, as tmux does
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return badRequest("tmux server %s: %v", socketLabel(socket), err)
	case fi.Mode().Type() != fs.ModeSocket:
		return badRequest("tmux server %s: %q is not a socket", socketLabel(socket), path)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Geteuid() {
		return nudge.NewError(nudge.Forbidden, fmt.Sprintf("tmux server %s belongs to another uid than this daemon's (%d): nudge drives only its own uid's tmux servers",
			socketLabel(socket), os.Geteuid()))
	}
	return nil
}

// notOwned is the error of a launch (spawn, a new window, a session) nudge refuses in a
// workspace bound to the user's own session.
func notOwned(ws string, p place, what string) error {
	return nudge.NewError(nudge.Conflict, fmt.Sprintf("workspace %s is bound to %s, which nudge does not own: it %s only in its own session %s; "+
		"use another workspace (--workspace NAME) for runtimes nudge starts", ws, p, what, SessionName(ws)))
}
