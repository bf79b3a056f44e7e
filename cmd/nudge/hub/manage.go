package hub

import (
	"context"
	"encoding/json"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/server"
	"github.com/nudgehq/nudge/panes"
)

// Manage is what another member may do to this host's runtimes through the hub: stop,
// restart, pause and resume them, and read their screens (satisfied by *panes.Registry).
type Manage interface {
	Stop(ctx context.Context, id, reason string) error
	Restart(ctx context.Context, id, reason string) (nudge.Runtime, error)
	SetPaused(id string, paused bool, reason string) (nudge.Runtime, error)
	Tail(ctx context.Context, rt nudge.Runtime, lines int) (panes.Screen, error)
}

// manageRequest is an act on another host's runtime, on its way to that host. The member
// that took it from its caller checked the caller's token for the runtime's workspace.
type manageRequest struct {
	Op        string              `json:"op"` // spawn, stop, restart, pause, resume, tail
	RuntimeID string              `json:"runtime_id"`
	Reason    string              `json:"reason,omitempty"`
	Lines     int                 `json:"lines,omitempty"`
	Spawn     *panes.SpawnRequest `json:"spawn,omitempty"`
}

// manageTimeout bounds an act on another host: a stop waits for the program to end.
const manageTimeout = 90 * time.Second

// manage sends req to the host holding rt's workspace and reads its answer.
func (f *Fleet) manage(ctx context.Context, rt nudge.Runtime, req manageRequest) (ctlReply, error) {
	host, away := f.HostOf(rt.WorkspaceID)
	switch {
	case host == "":
		return ctlReply{}, nudge.NewError(nudge.NotFound, "runtime "+rt.RuntimeID+" is on no host of the fleet")
	case away:
		return ctlReply{}, nudge.NewError(nudge.Unavailable, "host "+host+" of runtime "+rt.RuntimeID+" is away: try again when it is back")
	}
	req.RuntimeID = rt.RuntimeID
	b, _ := json.Marshal(req)
	rctx, cancel := context.WithTimeout(ctx, manageTimeout)
	defer cancel()
	m, err := f.nc.RequestWithContext(rctx, ctlSubject(host, f.cfg.HostName, "manage"), b)
	if err != nil {
		return ctlReply{}, nudge.NewError(nudge.Unavailable, "host "+host+" did not answer: "+err.Error())
	}
	var r ctlReply
	if err := json.Unmarshal(m.Data, &r); err != nil {
		return ctlReply{}, err
	}
	if r.Code != "" {
		return r, nudge.NewError(r.Code, r.Message)
	}
	return r, nil
}

// manageHere does another member's act on a runtime of this host, its reason marked
// hub:MEMBER so the runtime's own record says who asked.
func (f *Fleet) manageHere(from string, data []byte) (ctlReply, error) {
	var req manageRequest
	if err := json.Unmarshal(data, &req); err != nil {
		return ctlReply{}, nudge.NewError(nudge.BadRequest, "unreadable request")
	}
	if req.Op == "spawn" {
		return f.spawnHere(from, req)
	}
	rt, ok := f.local(req.RuntimeID)
	if !ok || !f.localRuntime(req.RuntimeID) {
		return ctlReply{}, nudge.NewError(nudge.NotFound, "runtime "+req.RuntimeID+" is not on host "+f.cfg.HostName)
	}
	if f.deps.Manage == nil {
		return ctlReply{}, nudge.NewError(nudge.Unavailable, "host "+f.cfg.HostName+" takes no acts on its runtimes through the hub")
	}
	why := "hub:" + from + ": " + req.Reason
	ctx, cancel := context.WithTimeout(f.ctx, manageTimeout-5*time.Second)
	defer cancel()
	var (
		r   ctlReply
		err error
		now nudge.Runtime
	)
	switch req.Op {
	case "stop":
		if err = f.deps.Manage.Stop(ctx, rt.RuntimeID, why); err == nil {
			now, _ = f.local(rt.RuntimeID)
		}
	case "restart":
		now, err = f.deps.Manage.Restart(ctx, rt.RuntimeID, why)
	case "pause", "resume":
		now, err = f.deps.Manage.SetPaused(rt.RuntimeID, req.Op == "pause", why)
		if err == nil && req.Op == "resume" && f.deps.Kick != nil {
			f.deps.Kick(rt.RuntimeID) // its held triggers go on
		}
	case "tail":
		var sc panes.Screen
		if sc, err = f.deps.Manage.Tail(ctx, rt, min(max(req.Lines, 0), maxTailLines)); err == nil {
			r.Screen = &sc
		}
		now = rt
	default:
		return ctlReply{}, nudge.NewError(nudge.BadRequest, "unknown act "+req.Op)
	}
	if err != nil {
		return ctlReply{}, err
	}
	f.log.Info("hub: an act on a runtime here", "op", req.Op, "runtime", rt.RuntimeID, "from", from)
	r.Runtime = &now
	return r, nil
}

// spawnHere spawns, for another member, a runtime in a workspace this host holds: this
// host's policy judges the request (its directories, profiles, launchers), as for a
// caller on its own socket.
func (f *Fleet) spawnHere(from string, req manageRequest) (ctlReply, error) {
	if req.Spawn == nil {
		return ctlReply{}, nudge.NewError(nudge.BadRequest, "a spawn without its request")
	}
	if f.deps.Spawn == nil {
		return ctlReply{}, nudge.NewError(nudge.Unavailable, "host "+f.cfg.HostName+" spawns nothing for other members")
	}
	if h, _ := f.HostOf(req.Spawn.Workspace); h != f.cfg.HostName {
		return ctlReply{}, nudge.NewError(nudge.NotFound, "workspace "+req.Spawn.Workspace+" is not held by host "+f.cfg.HostName)
	}
	ctx, cancel := context.WithTimeout(f.ctx, manageTimeout-5*time.Second)
	defer cancel()
	rt, err := f.deps.Spawn(ctx, from, *req.Spawn)
	if err != nil {
		return ctlReply{}, err
	}
	f.log.Info("hub: a runtime spawned here for another member", "runtime", rt.RuntimeID, "from", from)
	return ctlReply{Runtime: &rt}, nil
}

// The fleet's runtimes: an act on another host's runtime goes to that host.

// Spawn spawns in a workspace another host holds on that host (its policy decides), else
// here.
func (r fleetRuntimes) Spawn(ctx context.Context, req panes.SpawnRequest) (nudge.Runtime, error) {
	host, _ := r.f.HostOf(req.Workspace)
	if req.Host != "" || host == "" || host == r.f.cfg.HostName {
		return r.Runtimes.Spawn(ctx, req)
	}
	return r.f.managed(ctx, nudge.Runtime{RuntimeID: panes.RuntimeID(req.Workspace, req.Role), WorkspaceID: req.Workspace, Host: host},
		manageRequest{Op: "spawn", Spawn: &req})
}

func (r fleetRuntimes) Stop(ctx context.Context, id, reason string) error {
	rt, remote := r.remote(id)
	if !remote {
		return r.Runtimes.Stop(ctx, id, reason)
	}
	_, err := r.f.manage(ctx, rt, manageRequest{Op: "stop", Reason: reason})
	return err
}

func (r fleetRuntimes) Restart(ctx context.Context, id, reason string) (nudge.Runtime, error) {
	rt, remote := r.remote(id)
	if !remote {
		return r.Runtimes.Restart(ctx, id, reason)
	}
	return r.f.managed(ctx, rt, manageRequest{Op: "restart", Reason: reason})
}

func (r fleetRuntimes) SetPaused(id string, paused bool, reason string) (nudge.Runtime, error) {
	rt, remote := r.remote(id)
	if !remote {
		return r.Runtimes.SetPaused(id, paused, reason)
	}
	op := "resume"
	if paused {
		op = "pause"
	}
	return r.f.managed(r.f.ctx, rt, manageRequest{Op: op, Reason: reason})
}

// remote reports whether runtime id is another host's, with its record.
func (r fleetRuntimes) remote(id string) (nudge.Runtime, bool) {
	if _, ok := r.Runtimes.Get(id); ok {
		return nudge.Runtime{}, false
	}
	return r.f.remoteRuntime(id)
}

// managed is manage for an act that answers with the runtime's record.
func (f *Fleet) managed(ctx context.Context, rt nudge.Runtime, req manageRequest) (nudge.Runtime, error) {
	r, err := f.manage(ctx, rt, req)
	if err != nil {
		return nudge.Runtime{}, err
	}
	if r.Runtime == nil {
		return rt, nil
	}
	now := *r.Runtime
	if now.Host == "" {
		now.Host = rt.Host
	}
	return now, nil
}

// fleetPanes reads another host's runtime's screen through that host.
type fleetPanes struct {
	server.Panes
	f *Fleet
}

func (p fleetPanes) Tail(ctx context.Context, rt nudge.Runtime, lines int) (panes.Screen, error) {
	if p.f.localRuntime(rt.RuntimeID) {
		return p.Panes.Tail(ctx, rt, lines)
	}
	r, err := p.f.manage(ctx, rt, manageRequest{Op: "tail", Lines: lines})
	if err != nil || r.Screen == nil {
		return panes.Screen{}, err
	}
	return *r.Screen, nil
}

// maxTailLines bounds the screen another member may ask for (the API's own bound).
const maxTailLines = 5000
