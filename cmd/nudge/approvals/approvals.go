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
	"slices"
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
			l.pending = append(l.pending, *n.Approval)
		case n.Resolved != nil:
			l.pending = slices.DeleteFunc(l.pending, func(a native.Approval) bool { return string(a.ID) == string(n.Resolved) })
		case n.Status == "idle":
			l.pending = nil // a turn that ended asks nothing any more
		}
		l.mu.Unlock()
	}
}

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
// declines (or cancels, when that is the "no" the agent offers: the turn stops, as its own
// "no" does). It returns the backend ("" when it sent nothing: no channel, no request whose
// command is d's, or an option that is neither; the caller then types the option's keys)
// and an error when the agent refused the answer.
func (f *Follower) Answer(ctx context.Context, rt nudge.Runtime, d nudge.Dialog, opt nudge.DialogOption) (string, error) {
	if f == nil {
		return "", nil
	}
	decision := ""
	switch {
	case opt.Key != "" && opt.Key == d.ApproveKey:
		decision = "accept"
	case opt.Key != "" && opt.Key == d.DenyKey:
		decision = "decline"
	default:
		return "", nil
	}
	f.mu.Lock()
	l := f.links[rt.RuntimeID]
	f.mu.Unlock()
	if l == nil {
		return "", nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sub == nil {
		return "", nil
	}
	i := match(l.pending, d.Command)
	if i < 0 {
		return "", nil
	}
	a := l.pending[i]
	if decision == "decline" && !a.Offers("decline") && a.Offers("cancel") {
		decision = "cancel" // Codex's TUI offers "No, and tell Codex what to do differently": the turn stops
	}
	if !a.Offers(decision) {
		return "", nil // the agent wants another answer than these: its keys
	}
	if err := l.sub.Answer(ctx, a, decision); err != nil {
		return "", fmt.Errorf("answer over Codex's app-server: %w", err)
	}
	l.pending = slices.Delete(l.pending, i, i+1)
	return BackendCodex, nil
}

// match is the index of the one open request whose command is command, as the screen
// shows it (the request's own command, or one of the commands it is made of); -1 when
// none or several are, or the screen shows no command.
func match(pending []native.Approval, command string) int {
	if command == "" {
		return -1
	}
	found := -1
	for i, a := range pending {
		if a.Command == command || slices.Contains(a.Commands, command) {
			if found >= 0 {
				return -1
			}
			found = i
		}
	}
	return found
}
