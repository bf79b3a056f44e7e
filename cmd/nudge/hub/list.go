package hub

import (
	"encoding/json"
	"sort"
	"sync"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/server"
	"github.com/nudgehq/nudge/store"
)

// listMax bounds the triggers one host sends for another's list (the newest first): the
// answer stays far below the hub's largest message.
const listMax = 2000

// fleetStore lists the fleet's triggers: this host's, every other host's that is here
// (each asked for its own), and those this host routed to a host not here yet.
type fleetStore struct {
	server.Store
	f *Fleet
}

// ListTriggers is the local list merged with the fleet's, by trigger id (a host's own
// record first), in creation order, then cut to the filter's Limit. A host that does not
// answer within its time is left out of the list, not an error.
func (s fleetStore) ListTriggers(flt store.TriggerFilter) ([]nudge.Trigger, error) {
	local, err := s.Store.ListTriggers(flt)
	if err != nil || !s.f.up() || s.f.hereOnly(flt) {
		return local, err
	}
	byID := map[string]bool{}
	out := append([]nudge.Trigger(nil), local...)
	for _, t := range local {
		byID[t.TriggerID] = true
	}
	add := func(ts []nudge.Trigger) {
		for _, t := range ts {
			if !byID[t.TriggerID] && flt.Match(&t) {
				byID[t.TriggerID] = true
				out = append(out, t)
			}
		}
	}
	add(s.f.listHosts(flt))
	add(s.f.routedHere())
	sort.SliceStable(out, func(i, j int) bool { return out[i].CreatedAt.Before(out[j].CreatedAt) })
	if flt.Limit > 0 && len(out) > flt.Limit {
		if flt.Newest {
			out = out[len(out)-flt.Limit:]
		} else {
			out = out[:flt.Limit]
		}
	}
	return out, nil
}

// listHosts asks every other host that is here for its triggers that pass flt, at once.
func (f *Fleet) listHosts(flt store.TriggerFilter) []nudge.Trigger {
	body, err := json.Marshal(flt)
	if err != nil {
		return nil
	}
	var (
		mu  sync.Mutex
		out []nudge.Trigger
		wg  sync.WaitGroup
	)
	for _, h := range f.otherHosts() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := f.controlData(h, "list", body)
			if err != nil {
				f.log.Debug("hub: a host's triggers", "host", h, "err", err)
				return
			}
			mu.Lock()
			for _, t := range r.List {
				// A host speaks for the triggers of the workspaces it holds, under its name.
				if held, _ := f.HostOf(t.WorkspaceID); held == h {
					t.Host = h
					out = append(out, t)
				}
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

// routedHere is what this host knows of the triggers it routed through the hub: each
// one's latest receipt.
func (f *Fleet) routedHere() []nudge.Trigger {
	recs, err := f.api.mine(f.ctx)
	if err != nil {
		return nil
	}
	var out []nudge.Trigger
	for _, b := range recs {
		var t nudge.Trigger
		if json.Unmarshal(b, &t) != nil || t.Host == f.cfg.HostName {
			continue // this host's own: in its store
		}
		if r, ok := f.routed(t.TriggerID); ok {
			t = r
		}
		out = append(out, t)
	}
	return out
}

// listHere is this host's answer to another's list: its stored triggers that pass the
// filter, the newest listMax, each with this host's name.
func (f *Fleet) listHere(data []byte) ([]nudge.Trigger, error) {
	if f.deps.Triggers == nil {
		return nil, nil
	}
	var flt store.TriggerFilter
	if err := json.Unmarshal(data, &flt); err != nil {
		return nil, nudge.NewError(nudge.BadRequest, "list: "+err.Error())
	}
	if flt.Limit <= 0 || flt.Limit > listMax {
		flt.Limit = listMax
	}
	flt.Newest = true
	ts, err := f.deps.Triggers.ListTriggers(flt)
	for i := range ts {
		if ts[i].Host == "" {
			ts[i].Host = f.cfg.HostName
		}
	}
	return ts, err
}

// otherHosts are the hosts that are here, but this one.
func (f *Fleet) otherHosts() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var hosts []string
	for h := range f.alive {
		if h != f.cfg.HostName && f.aliveLocked(h) {
			hosts = append(hosts, h)
		}
	}
	return hosts
}

// hereOnly reports whether flt names a runtime of this host, or a workspace this host
// holds: no other host has its triggers.
func (f *Fleet) hereOnly(flt store.TriggerFilter) bool {
	if flt.RuntimeID != "" {
		for _, rt := range f.deps.Runtimes.List() {
			if rt.RuntimeID == flt.RuntimeID {
				return true
			}
		}
	}
	if flt.Workspace != "" {
		host, _ := f.HostOf(flt.Workspace)
		return host == f.cfg.HostName
	}
	return false
}
