package hub

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/server"
)

// fleetDialogs answers a dialog of another host's runtime through that host.
type fleetDialogs struct {
	server.Dialogs
	f *Fleet
}

// answerRequest is a dialog's answer on its way to the runtime's host.
type answerRequest struct {
	RuntimeID string `json:"runtime_id"`
	DialogID  string `json:"dialog_id"`
	Choice    string `json:"choice"`
	Who       string `json:"who"`
	Reason    string `json:"reason"`
}

// answered is a host's answer: the dialog and the option chosen.
type answered struct {
	Dialog nudge.Dialog       `json:"dialog"`
	Option nudge.DialogOption `json:"option"`
}

func (d fleetDialogs) Answer(ctx context.Context, rt nudge.Runtime, dialogID, choice, who, reason string) (nudge.Dialog, nudge.DialogOption, error) {
	if d.f.localRuntime(rt.RuntimeID) {
		return d.Dialogs.Answer(ctx, rt, dialogID, choice, who, reason)
	}
	host, _ := d.f.HostOf(rt.WorkspaceID)
	if host == "" {
		return nudge.Dialog{}, nudge.DialogOption{}, nudge.NewError(nudge.NotFound, "runtime "+rt.RuntimeID+" is on no host of the fleet")
	}
	b, _ := json.Marshal(answerRequest{RuntimeID: rt.RuntimeID, DialogID: dialogID, Choice: choice, Who: who, Reason: reason})
	rctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	m, err := d.f.nc.RequestWithContext(rctx, ctlSubject(host, d.f.cfg.HostName, "answer"), b)
	if err != nil {
		return nudge.Dialog{}, nudge.DialogOption{}, nudge.NewError(nudge.Unavailable, "host "+host+" did not answer: "+err.Error())
	}
	var r ctlReply
	if err := json.Unmarshal(m.Data, &r); err != nil {
		return nudge.Dialog{}, nudge.DialogOption{}, err
	}
	if r.Code != "" || r.Answer == nil {
		return nudge.Dialog{}, nudge.DialogOption{}, nudge.NewError(r.Code, r.Message)
	}
	return r.Answer.Dialog, r.Answer.Option, nil
}

// localRuntime reports whether runtime id is this host's (and its workspace not held by
// another host).
func (f *Fleet) localRuntime(id string) bool {
	rt, ok := f.local(id)
	if !ok {
		return false
	}
	h, _ := f.HostOf(rt.WorkspaceID)
	return h == "" || h == f.cfg.HostName
}

func (f *Fleet) local(id string) (nudge.Runtime, bool) {
	for _, rt := range f.deps.Runtimes.List() {
		if rt.RuntimeID == id {
			return rt, true
		}
	}
	return nudge.Runtime{}, false
}

// answerHere answers a dialog of this host's runtime for another member (which checked
// its caller's token); the answer is audited here as any, by hub:MEMBER:SUBJECT.
func (f *Fleet) answerHere(from string, data []byte) (*answered, error) {
	var req answerRequest
	if err := json.Unmarshal(data, &req); err != nil {
		return nil, nudge.NewError(nudge.BadRequest, "unreadable answer request")
	}
	rt, ok := f.local(req.RuntimeID)
	if !ok {
		return nil, nudge.NewError(nudge.NotFound, "runtime "+req.RuntimeID+" is not on host "+f.cfg.HostName)
	}
	if f.deps.Dialogs == nil {
		return nil, errors.New("host " + f.cfg.HostName + " cannot answer dialogs")
	}
	ctx, cancel := context.WithTimeout(f.ctx, 15*time.Second)
	defer cancel()
	d, opt, err := f.deps.Dialogs.Answer(ctx, rt, req.DialogID, req.Choice, "hub:"+from+":"+req.Who, req.Reason)
	if err != nil {
		return nil, err
	}
	return &answered{Dialog: d, Option: opt}, nil
}
