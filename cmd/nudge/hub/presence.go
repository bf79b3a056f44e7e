package hub

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/nudgehq/nudge"
)

// beat sends this host's heartbeat every beat, and its runtimes whenever they changed; a
// member also reads the fleet's index (who is here, who holds what) and the runtime lists
// that changed. The member is up (its fleet known) after its first index.
func (f *Fleet) beat() {
	t := time.NewTicker(f.cfg.Heartbeat)
	defer t.Stop()
	var last []byte
	for {
		ctx := f.ctx
		if err := f.api.beat(ctx); err != nil && ctx.Err() == nil {
			f.log.Debug("hub heartbeat", "err", err)
		}
		if f.resend.Swap(false) {
			last = nil
		}
		if b, err := json.Marshal(f.deps.Runtimes.List()); err == nil && !bytes.Equal(b, last) {
			if err := f.api.putRuntimes(ctx, b); err == nil {
				last = b
			} else if ctx.Err() == nil {
				f.log.Debug("hub runtimes", "err", err)
			}
		}
		if f.srv == nil {
			f.sync(ctx)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sync reads the fleet's index and the runtime lists whose version moved (a member).
func (f *Fleet) sync(ctx context.Context) {
	ix, err := f.api.index(ctx)
	if err != nil {
		if ctx.Err() == nil {
			f.log.Debug("hub index", "err", err)
		}
		return
	}
	f.mu.Lock()
	clear(f.alive)
	for _, h := range ix.Alive {
		f.alive[h] = true
	}
	f.claims = ix.Claims
	var stale []string
	for h, v := range ix.Versions {
		if h != f.cfg.HostName && f.versions[h] != v {
			stale = append(stale, h)
		}
	}
	f.mu.Unlock()
	f.readyOnce.Do(func() { close(f.ready) }) // who holds which workspace is known: up
	for _, h := range stale {
		b, err := f.api.runtimesOf(ctx, h)
		var rts []nudge.Runtime
		if err != nil || json.Unmarshal(b, &rts) != nil {
			continue
		}
		f.mu.Lock()
		f.runtimes[h], f.versions[h] = rts, ix.Versions[h]
		f.mu.Unlock()
	}
}

// watch follows a bucket of the hub from its start, handing every key's latest value
// (nil: gone) to fn, and watches again after a failure. loaded runs once, when the
// bucket's present values have all been handed over the first time (or ctx ended: the
// WaitGroup it releases must not hold a Close).
func (f *Fleet) watch(bucket string, fn func(key string, val []byte), loaded func()) {
	var once sync.Once
	defer once.Do(loaded)
	for f.ctx.Err() == nil {
		w, err := f.kv[bucket].WatchAll(f.ctx)
		if err == nil {
			f.drain(w, fn, func() { once.Do(loaded) })
			w.Stop() //nolint:errcheck // ends with ctx
		}
		select {
		case <-f.ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func (f *Fleet) drain(w jetstream.KeyWatcher, fn func(string, []byte), loaded func()) {
	for {
		select {
		case <-f.ctx.Done():
			return
		case e, ok := <-w.Updates():
			if !ok {
				return
			}
			if e == nil {
				loaded() // the initial values are all in
				continue
			}
			if e.Operation() == jetstream.KeyValuePut {
				fn(e.Key(), e.Value())
			} else {
				fn(e.Key(), nil)
			}
		}
	}
}

// judge is the hub's: every beat, the hosts whose beat came within 3 beats are here.
func (f *Fleet) judge() {
	t := time.NewTicker(f.cfg.Heartbeat)
	defer t.Stop()
	for {
		f.mu.Lock()
		clear(f.alive)
		for h, at := range f.seen {
			if time.Since(at) < 3*f.cfg.Heartbeat {
				f.alive[h] = true
			}
		}
		f.mu.Unlock()
		select {
		case <-f.ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (f *Fleet) onClaim(ws string, val []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if val == nil {
		delete(f.claims, ws)
	} else {
		f.claims[ws] = string(val)
	}
}

// onRuntimes keeps another host's runtimes; on the hub it also claims the host's
// workspaces for it (the first host to hold one keeps it while it lists it) and releases
// those it no longer lists.
func (f *Fleet) onRuntimes(host string, val []byte) {
	var rts []nudge.Runtime
	if val != nil && json.Unmarshal(val, &rts) != nil {
		f.log.Warn("hub: unreadable runtimes", "host", host)
		return
	}
	rts = slices.DeleteFunc(rts, func(rt nudge.Runtime) bool {
		if !idOfItsWorkspace(rt) {
			f.log.Warn("hub: a host lists a runtime whose id is not of its workspace: left out", "host", host, "runtime", rt.RuntimeID, "workspace", rt.WorkspaceID)
			return true
		}
		return false
	})
	f.mu.Lock()
	if host != f.cfg.HostName {
		f.runtimes[host] = rts
	}
	f.versions[host]++
	f.mu.Unlock()
	if f.srv != nil {
		f.arbitrate(host, rts)
	}
}

// arbitrate is the hub's claim of host's workspaces.
func (f *Fleet) arbitrate(host string, rts []nudge.Runtime) {
	listed := map[string]bool{}
	for _, rt := range rts {
		listed[rt.WorkspaceID] = true
	}
	f.mu.Lock()
	allowed, known := f.allowed[host]
	var claim, release []string
	for ws := range listed {
		owner, held := f.claims[ws]
		switch {
		case host != f.cfg.HostName && (!known || allowed != nil && !slices.Contains(allowed, ws)):
			f.log.Warn("hub: a host lists a workspace it may not hold", "host", host, "workspace", ws)
		case !held:
			claim = append(claim, ws)
		case owner != host:
			f.log.Warn("hub: a workspace is listed by two hosts; it stays with the first", "workspace", ws, "holder", owner, "also", host)
		}
	}
	for ws, owner := range f.claims {
		if owner == host && !listed[ws] {
			release = append(release, ws)
		}
	}
	f.mu.Unlock()
	kv := f.kv[bucketWS]
	for _, ws := range claim {
		if _, err := kv.Create(f.ctx, ws, []byte(host)); err == nil {
			f.onClaim(ws, []byte(host))
		}
	}
	for _, ws := range release {
		if err := kv.Delete(f.ctx, ws); err == nil {
			f.onClaim(ws, nil)
		}
	}
}

// HostOf is the host that holds workspace ws in the fleet ("": none); away reports that
// its heartbeat stopped.
func (f *Fleet) HostOf(ws string) (host string, away bool) {
	if f == nil {
		return "", false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	h := f.claims[ws]
	return h, h != "" && !f.aliveLocked(h)
}

// holdsHere reports whether this host runs a runtime of workspace ws.
func (f *Fleet) holdsHere(ws string) bool {
	for _, rt := range f.deps.Runtimes.List() {
		if rt.WorkspaceID == ws {
			return true
		}
	}
	return false
}

// Remote lists the other hosts' runtimes, each with Host set to its host's name (when it
// has no ssh host of its own) and, for a host that is away, status offline.
func (f *Fleet) Remote() []nudge.Runtime {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	hosts := make([]string, 0, len(f.runtimes))
	for h := range f.runtimes {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	var out []nudge.Runtime
	seen := map[string]bool{}
	for _, h := range hosts {
		for _, rt := range f.runtimes[h] {
			if f.claims[rt.WorkspaceID] != h || !idOfItsWorkspace(rt) || seen[rt.RuntimeID] {
				continue // not its workspace (held by another, or not allowed), or an id another host's record names
			}
			seen[rt.RuntimeID] = true
			if rt.Host == "" {
				rt.Host = h
			}
			if !f.aliveLocked(h) {
				rt.Status = nudge.StatusOffline
			}
			out = append(out, rt)
		}
	}
	return out
}

// idOfItsWorkspace reports whether rt's id is one of its own workspace (rt_WS.ROLE): a
// host listing a runtime of its workspace under another workspace's id would have acts
// on that id (tail, stop) brought to it.
func idOfItsWorkspace(rt nudge.Runtime) bool {
	return rt.WorkspaceID != "" && strings.HasPrefix(rt.RuntimeID, "rt_"+rt.WorkspaceID+".")
}

// remoteRuntime is another host's runtime by id.
func (f *Fleet) remoteRuntime(id string) (nudge.Runtime, bool) {
	for _, rt := range f.Remote() {
		if rt.RuntimeID == id {
			return rt, true
		}
	}
	return nudge.Runtime{}, false
}

// hosts is every host the fleet knows of, this one first.
func (f *Fleet) hosts() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := []string{f.cfg.HostName}
	for h := range f.alive {
		if h != f.cfg.HostName {
			out = append(out, h)
		}
	}
	for h := range f.runtimes {
		if _, ok := f.alive[h]; !ok && h != f.cfg.HostName {
			out = append(out, h)
		}
	}
	return out
}

func (f *Fleet) aliveLocked(host string) bool { return f.alive[host] }
