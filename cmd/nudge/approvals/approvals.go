// Package approvals follows the approval requests agents state over their own channel,
// so that a dialog nudge answers is answered there, with the decision the agent offers,
// rather than with keys typed into its screen. For Codex it holds one subscription to
// the runtime's thread on Codex's app-server (inject/native) per runtime whose profile's
// channel is "codex" and whose session and directory are known; the requests it reports
// are kept until they are answered (by nudge, or by anyone at the agent's own screen).
//
// The screen still says that a dialog is up, and which (the dialogs room reads it, the
// policy matches it): a request is answered over the channel only when its command is the
// one the screen shows, so a dialog the agent drew itself, with no request behind it, is
// never answered here.
package approvals

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/inject/native"
	"github.com/nudgehq/nudge/panes"
)

// BackendCodex names an answer sent over Codex's app-server.
const BackendCodex = "codex_app_server"

// Config is what a Follower needs.
type Config struct {
	Profiles map[string]panes.Profile
	// Codex is the app-server of a runtime's Codex (its CODEX_HOME); ok false when the
	// runtime has none nudge may use.
	Codex func(rt nudge.Runtime) (native.Codex, bool)
	// Runtimes lists the runtimes (at Open, then news comes on Bus).
	Runtimes interface{ List() []nudge.Runtime }
	Bus      *nudge.Bus
	Logger   hclog.Logger
	// Audit records each answer sent over a channel with the request as the agent stated
	// it (its full command, directory, the decision); nil: not recorded.
	Audit func(nudge.AuditRecord)
}

// Follower follows the approvals of every runtime with a channel. Close stops it.
type Follower struct {
	cfg  Config
	sub  *nudge.Client
	ctx  context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup

	mu    sync.Mutex
	links map[string]*link // by runtime id
}

// link is one runtime's subscription and the requests it has open.
type link struct {
	key     string // the session and directory it follows
	cancel  context.CancelFunc
	mu      sync.Mutex
	sub     *native.Subscription // nil while (re)connecting
	pending []native.Approval
}

// Open starts following the runtimes listed now, and those that come.
func Open(cfg Config) *Follower {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	ctx, stop := context.WithCancel(context.Background())
	f := &Follower{cfg: cfg, ctx: ctx, stop: stop, links: map[string]*link{}}
	f.sub = nudge.NewClient(cfg.Bus, "approvals", 256)
	nudge.Subscribe(f.sub, func(ev nudge.RuntimeChanged) { f.update(ev.Runtime) })
	for _, rt := range cfg.Runtimes.List() {
		f.update(rt)
	}
	return f
}

// Close stops every subscription and waits for them.
func (f *Follower) Close() {
	if f == nil {
		return
	}
	f.sub.Close()
	f.stop()
	f.wg.Wait()
}

// followed reports whether rt's approvals can be followed, and under which key (a new
// session or directory is a new subscription).
func (f *Follower) followed(rt nudge.Runtime) (string, bool) {
	prof, ok := f.cfg.Profiles[rt.Agent]
	if !ok || prof.Channel != panes.ChannelCodex || rt.Host != "" || rt.SessionID == "" || rt.Dir == "" || !panes.Live(rt.Status) {
		return "", false
	}
	for _, o := range f.cfg.Runtimes.List() {
		if o.RuntimeID != rt.RuntimeID && o.SessionID == rt.SessionID && panes.Live(o.Status) {
			return "", false // two runtimes name one session: neither is followed
		}
	}
	return rt.SessionID + "\x00" + rt.Dir, true
}

// update starts, restarts or stops rt's link as its record says.
func (f *Follower) update(rt nudge.Runtime) {
	key, ok := f.followed(rt)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ctx.Err() != nil {
		return
	}
	l := f.links[rt.RuntimeID]
	if l != nil && (!ok || l.key != key) {
		l.cancel()
		delete(f.links, rt.RuntimeID)
		l = nil
	}
	if !ok || l != nil {
		return
	}
	codex, ok := f.cfg.Codex(rt)
	if !ok {
		return
	}
	ctx, cancel := context.WithCancel(f.ctx)
	l = &link{key: key, cancel: cancel}
	f.links[rt.RuntimeID] = l
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		f.follow(ctx, l, codex, rt)
	}()
}

// follow keeps l subscribed to rt's thread until ctx ends: a lost connection (the agent
// restarted, its app-server not up yet) is dialled again, waiting longer each time (up to
// 30 s).
func (f *Follower) follow(ctx context.Context, l *link, codex native.Codex, rt nudge.Runtime) {
	wait := 500 * time.Millisecond
	for ctx.Err() == nil {
		sub, err := codex.Subscribe(ctx, rt.SessionID, rt.Dir)
		if err != nil {
			if errors.Is(err, native.ErrNotThisThread) {
				f.cfg.Logger.Warn("approvals: the session is not this runtime's: not followed", "runtime", rt.RuntimeID, "err", err)
				return
			}
			f.cfg.Logger.Debug("approvals: subscribe", "runtime", rt.RuntimeID, "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			wait = min(2*wait, 30*time.Second)
			continue
		}
		wait = 500 * time.Millisecond
		l.mu.Lock()
		l.sub, l.pending = sub, nil
		l.mu.Unlock()
		f.read(ctx, l, sub, rt.RuntimeID)
		l.mu.Lock()
		l.sub, l.pending = nil, nil
		l.mu.Unlock()
		sub.Close()
	}
}

// read takes sub's notices until it ends.
func (f *Follower) read(ctx context.Context, l *link, sub *native.Subscription, id string) {
	for {
		n, err := sub.Next(ctx)
		if err != nil {
			if ctx.Err() == nil {
				f.cfg.Logger.Debug("approvals: subscription ended", "runtime", id, "err", err)
			}
			return
		}
		l.mu.Lock()
		switch {
		case n.Approval != nil:
			if len(l.pending) >= maxPending {
				// More open requests than an agent asks at once: none is trusted to be
				// told apart on the screen any more; answers go by keys until the turn ends.
				l.pending = l.pending[:0]
				f.cfg.Logger.Warn("approvals: too many open requests: answered by keys", "runtime", id)
			}
			l.pending = append(l.pending, *n.Approval)
		case n.Resolved != nil:
			l.pending = slices.DeleteFunc(l.pending, func(a native.Approval) bool { return string(a.ID) == string(n.Resolved) })
		case n.Status == "idle":
			l.pending = nil // a turn that ended asks nothing any more
		}
		l.mu.Unlock()
	}
}

// maxPending bounds the open requests kept per runtime.
const maxPending = 32

// Pending lists the requests runtime id has open (for tests and the record).
func (f *Follower) Pending(id string) []native.Approval {
	f.mu.Lock()
	l := f.links[id]
	f.mu.Unlock()
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.pending)
}

// Answer answers, over the agent's channel, the request behind dialog d that rt's screen
// shows, with the decision of option opt: d's approve option accepts, its deny option
// cancels (the turn stops, as Codex's own "No, and tell Codex what to do differently"
// does), or declines where the agent offers no cancel. It returns the backend ("" when it
// sent nothing: no channel, no single request whose command is d's, an option that is
// neither or both, a subscription of another session than rt's now; the caller then types
// the option's keys) and an error when the answer could not be sent. Codex's decisions
// carry no reason: the reason given is in the audit record only.
func (f *Follower) Answer(ctx context.Context, rt nudge.Runtime, d nudge.Dialog, opt nudge.DialogOption, _ string) (string, error) {
	if f == nil || opt.Key == "" || d.ApproveKey == d.DenyKey {
		return "", nil // a dialog whose yes and no are one key says nothing of what is meant
	}
	deny := false
	switch opt.Key {
	case d.ApproveKey:
	case d.DenyKey:
		deny = true
	default:
		return "", nil
	}
	key, ok := f.followed(rt)
	f.mu.Lock()
	l := f.links[rt.RuntimeID]
	f.mu.Unlock()
	if !ok || l == nil || l.key != key {
		return "", nil // the runtime's session or directory changed: its old link answers nothing
	}
	l.mu.Lock()
	sub := l.sub
	i := match(l.pending, d.Command)
	var a native.Approval
	if i >= 0 {
		a = l.pending[i]
	}
	l.mu.Unlock()
	if sub == nil || i < 0 || a.ThreadID != rt.SessionID {
		return "", nil
	}
	decision := "accept"
	if deny {
		decision = "cancel"
		if !a.Offers("cancel") {
			decision = "decline"
		}
	}
	if !a.Offers(decision) {
		return "", nil // the agent wants another answer than these: its keys
	}
	if err := sub.Answer(ctx, a, decision); err != nil {
		return "", fmt.Errorf("answer over Codex's app-server: %w", err)
	}
	l.mu.Lock()
	l.pending = slices.DeleteFunc(l.pending, func(p native.Approval) bool { return string(p.ID) == string(a.ID) })
	l.mu.Unlock()
	f.cfg.Logger.Info("approvals: answered over Codex's app-server", "runtime", rt.RuntimeID, "decision", decision, "command", a.Command, "cwd", a.Cwd)
	if f.cfg.Audit != nil {
		f.cfg.Audit(nudge.AuditRecord{Event: "approval_answered", RuntimeID: rt.RuntimeID, Workspace: rt.WorkspaceID, Subject: BackendCodex,
			Reason: fmt.Sprintf("%s: request %s of thread %s: %s %q in %s (dialog %s)", BackendCodex, a.ID, a.ThreadID, decision, a.Command, a.Cwd, d.DialogID)})
	}
	return BackendCodex, nil
}

// match is the index of the one open request whose command is command, as the screen
// shows it: the request's whole command, or the script of its shell wrapper
// ("/bin/bash -lc '…'"), exactly; -1 when none or several are, or the screen shows no
// command. A part of a request's command (one of its commandActions) is not its command:
// a screen showing `touch a.txt` never answers `touch a.txt && curl … | sh`.
func match(pending []native.Approval, command string) int {
	if command == "" {
		return -1
	}
	found := -1
	for i, a := range pending {
		if a.Kind != "command" && a.Kind != "" {
			continue
		}
		if a.Command == command || shellScript(a.Command) == command {
			if found >= 0 {
				return -1
			}
			found = i
		}
	}
	return found
}

// shellScript is the script of a command that runs one through a shell (`SHELL -c SCRIPT`
// or `-lc`, SHELL one of bash, zsh, sh, dash), read with the shell's quoting; "" for any
// other command, or one whose words cannot be read without running a shell (an unquoted
// operator, a substitution).
func shellScript(command string) string {
	words, ok := shellWords(command)
	if !ok || len(words) != 3 || (words[1] != "-c" && words[1] != "-lc") {
		return ""
	}
	switch path.Base(words[0]) {
	case "bash", "zsh", "sh", "dash":
		return words[2]
	}
	return ""
}

// shellWords splits s into words as a POSIX shell would with no expansion: blanks
// separate words, single quotes keep everything, double quotes keep everything but the
// escapes of backslash, double quote, dollar and backquote, a backslash outside quotes
// escapes the next character. ok is false for what would need more than quoting (an
// unquoted operator, glob or $, a backquote, an unclosed quote).
func shellWords(s string) (words []string, ok bool) {
	var w strings.Builder
	in := false // inside a word
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			if in {
				words, in = append(words, w.String()), false
				w.Reset()
			}
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, false
			}
			w.WriteString(s[i+1 : i+1+j])
			i, in = i+1+j, true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				switch {
				case s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\\\"$`", s[i+1]) >= 0:
					i++
					w.WriteByte(s[i])
				case s[i] == '$' || s[i] == '`':
					return nil, false
				default:
					w.WriteByte(s[i])
				}
			}
			if i >= len(s) {
				return nil, false
			}
			in = true
		case c == '\\':
			if i+1 >= len(s) {
				return nil, false
			}
			i++
			w.WriteByte(s[i])
			in = true
		case strings.IndexByte(";&|<>()$`\n*?[#~{}", c) >= 0:
			return nil, false
		default:
			w.WriteByte(c)
			in = true
		}
	}
	if in {
		words = append(words, w.String())
	}
	return words, true
}
