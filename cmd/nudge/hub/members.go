package hub

import (
	"path/filepath"
	"slices"
	"time"

	"github.com/fsnotify/fsnotify"
)

// watchUsers reads the hub's --hub-users file again whenever it changes (written in
// place, or replaced by a rename), so a member is added, removed or restricted without
// restarting the hub. A file that does not read (a bad line, a wrong mode) changes
// nothing and is logged.
func (f *Fleet) watchUsers() {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		f.log.Warn("hub: --hub-users is not watched: changes need a restart", "err", err)
		return
	}
	defer w.Close()
	path := filepath.Clean(f.cfg.Users)
	if err := w.Add(filepath.Dir(path)); err != nil { // the directory: a rename replaces the file
		f.log.Warn("hub: --hub-users is not watched: changes need a restart", "err", err)
		return
	}
	var settle <-chan time.Time
	for {
		select {
		case <-f.ctx.Done():
			return
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			if filepath.Clean(ev.Name) == path {
				settle = time.After(200 * time.Millisecond) // an editor's writes come in bursts
			}
		case err, ok := <-w.Errors:
			if !ok {
				return
			}
			f.log.Warn("hub: watching --hub-users", "err", err)
		case <-settle:
			settle = nil
			f.reloadUsers()
		}
	}
}

// reloadUsers makes the users file's identities the hub's members: the server's users
// change first (a member removed is disconnected, one added may connect), then the hub's
// view: a new member's triggers are delivered, a removed one's runtimes leave the fleet
// and its workspaces are released, and a workspace a member may no longer hold is
// released for another to claim.
func (f *Fleet) reloadUsers() {
	members, err := readIdentities(f.cfg.Users)
	if err != nil {
		f.log.Warn("hub: --hub-users not read again; the members stay as they were", "err", err)
		return
	}
	if err := f.srv.reload(f.cfg.HostName, members, f.log); err != nil {
		f.log.Warn("hub: --hub-users not applied; the members stay as they were", "err", err)
		return
	}
	next := map[string][]string{}
	for _, m := range members {
		next[m.Name] = m.Workspaces
	}
	f.mu.Lock()
	var added, removed, release []string
	for h := range next {
		if _, ok := f.allowed[h]; !ok {
			added = append(added, h)
		}
	}
	for h := range f.allowed {
		if _, ok := next[h]; !ok {
			removed = append(removed, h)
			delete(f.seen, h)
			delete(f.alive, h)
		}
	}
	f.allowed = next
	for ws, h := range f.claims {
		if h == f.cfg.HostName {
			continue
		}
		if allowed, ok := next[h]; !ok || allowed != nil && !slices.Contains(allowed, ws) {
			release = append(release, ws)
		}
	}
	f.mu.Unlock()
	for _, h := range removed {
		f.stopConsumer(h)
		if err := f.kv[bucketRTs].Delete(f.ctx, h); err != nil {
			f.log.Debug("hub: a removed member's runtimes", "host", h, "err", err)
		}
	}
	for _, ws := range release {
		if err := f.kv[bucketWS].Delete(f.ctx, ws); err == nil {
			f.onClaim(ws, nil)
		}
	}
	for _, h := range added {
		if err := f.startConsumer(f.ctx, h); err != nil {
			f.log.Warn("hub: a new member's triggers", "host", h, "err", err)
		}
	}
	f.log.Info("hub: members read again", "members", len(members), "added", added, "removed", removed, "released", release)
}

// member reports whether host h is the hub's or one of its members now (the hub's).
func (f *Fleet) member(h string) bool {
	if h == f.cfg.HostName {
		return true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.allowed[h]
	return ok
}
