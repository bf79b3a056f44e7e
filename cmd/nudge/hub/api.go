package hub

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// hubAPI is what a host asks of the hub: the hub's own host calls it directly (direct),
// a member through the hub's service on nudge.api.HOST.OP (remote). Members have no
// JetStream access of their own: every reply subject is one a requester picks, and a
// reply of the JetStream API to a subject of the hub's buckets or queue would write
// there in the server's name. The hub's service answers only on the requester's own
// inbox, and takes the requester's name from the subject, which the hub's permissions let
// each member publish with its own name only.
type hubAPI interface {
	beat(ctx context.Context) error
	putRuntimes(ctx context.Context, list []byte) error
	putReceipt(ctx context.Context, id string, rec []byte) error
	getReceipt(ctx context.Context, writer, id string) ([]byte, error) // errNoReceipt: none
	route(ctx context.Context, to, id string, msg []byte, ttl time.Duration) (duplicate bool, err error)
	index(ctx context.Context) (fleetIndex, error)
	runtimesOf(ctx context.Context, host string) ([]byte, error)
	mine(ctx context.Context) ([][]byte, error)                 // the receipts this host wrote
	auditHead(ctx context.Context) (auditHead, error)           // this host's audit chain as the hub has it
	putAudit(ctx context.Context, recs []json.RawMessage) error // this host's next audit records
}

var errNoReceipt = errors.New("no receipt")

// errLoading: the hub has not read its buckets yet (just started): its index would be
// partial.
var errLoading = errors.New("the hub is loading the fleet's state")

// fleetIndex is who is here, who holds which workspace, and the version of each host's
// runtime list (a member fetches a list again when its version moved).
type fleetIndex struct {
	Alive    []string          `json:"alive"`
	Claims   map[string]string `json:"claims"`
	Versions map[string]uint64 `json:"versions"`
}

// apiReq and apiResp are the hub service's messages.
type apiReq struct {
	Host, ID, To string
	TTL          time.Duration
	Data         json.RawMessage `json:",omitempty"`
}

type apiResp struct {
	Data      json.RawMessage   `json:",omitempty"`
	List      []json.RawMessage `json:",omitempty"`
	Index     *fleetIndex       `json:",omitempty"`
	Duplicate bool              `json:",omitempty"`
	None      bool              `json:",omitempty"`
	Err       string            `json:",omitempty"`
}

func apiSubject(from, op string) string { return "nudge.api." + from + "." + op }

// direct is the hub's API as the hub runs it, for host from.
type direct struct {
	f    *Fleet
	from string
}

func (d direct) beat(context.Context) error {
	d.f.mu.Lock()
	d.f.seen[d.from] = time.Now()
	d.f.mu.Unlock()
	return nil
}

func (d direct) putRuntimes(ctx context.Context, list []byte) error {
	_, err := d.f.kv[bucketRTs].Put(ctx, d.from, list)
	return err
}

func (d direct) putReceipt(ctx context.Context, id string, rec []byte) error {
	_, err := d.f.kv[bucketRcpt].Put(ctx, d.from+"."+key(id), rec)
	return err
}

func (d direct) getReceipt(ctx context.Context, writer, id string) ([]byte, error) {
	if !validName.MatchString(writer) {
		return nil, errNoReceipt
	}
	e, err := d.f.kv[bucketRcpt].Get(ctx, writer+"."+key(id))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, errNoReceipt
	}
	if err != nil {
		return nil, err
	}
	return e.Value(), nil
}

func (d direct) route(ctx context.Context, to, id string, msg []byte, ttl time.Duration) (bool, error) {
	if !validName.MatchString(to) {
		return false, errors.New("bad host " + to)
	}
	ack, err := d.f.js.Publish(ctx, triggerSubject(to, d.from), msg, jetstream.WithMsgID(id), jetstream.WithMsgTTL(ttl))
	if err != nil {
		return false, err
	}
	return ack.Duplicate, nil
}

func (d direct) index(context.Context) (fleetIndex, error) {
	f := d.f
	if !f.up() {
		return fleetIndex{}, errLoading // a member keeps the claims it knew
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	ix := fleetIndex{Claims: map[string]string{}, Versions: map[string]uint64{}}
	for h := range f.alive {
		ix.Alive = append(ix.Alive, h)
	}
	for ws, h := range f.claims {
		ix.Claims[ws] = h
	}
	for h, v := range f.versions {
		ix.Versions[h] = v
	}
	return ix, nil
}

func (d direct) runtimesOf(ctx context.Context, host string) ([]byte, error) {
	if !validName.MatchString(host) {
		return nil, errNoReceipt
	}
	e, err := d.f.kv[bucketRTs].Get(ctx, host)
	if err != nil {
		return nil, err
	}
	return e.Value(), nil
}

func (d direct) auditHead(ctx context.Context) (auditHead, error) {
	return d.f.hubAuditHead(ctx, d.from)
}

func (d direct) putAudit(ctx context.Context, recs []json.RawMessage) error {
	return d.f.keepAudit(ctx, d.from, recs)
}

func (d direct) mine(ctx context.Context) ([][]byte, error) {
	kl, err := d.f.kv[bucketRcpt].ListKeysFiltered(ctx, d.from+".*")
	if err != nil {
		return nil, err
	}
	var keys []string
	for k := range kl.Keys() {
		keys = append(keys, k)
	}
	var out [][]byte
	for _, k := range keys {
		if e, err := d.f.kv[bucketRcpt].Get(ctx, k); err == nil {
			out = append(out, e.Value())
		}
	}
	return out, nil
}

// serve is the hub's service: it answers each member's requests on the member's own
// inbox only (else nothing), as direct for that member.
func (f *Fleet) serve(m *nats.Msg) {
	from, op := token(m.Subject, 2), token(m.Subject, 3)
	if m.Header.Get("Status") != "" {
		return // the server's "no responders" to a request of another, sent here as its reply
	}
	if !f.member(from) {
		f.log.Warn("hub: a request from a host that is no member is dropped", "from", from, "op", op)
		return
	}
	if op != "beat" && !strings.HasPrefix(m.Reply, inboxPrefix(from)+".") {
		f.log.Warn("hub: a request whose reply is not the requester's own inbox is dropped", "from", from, "op", op, "reply", m.Reply)
		return
	}
	var req apiReq
	if len(m.Data) > 0 && json.Unmarshal(m.Data, &req) != nil {
		return
	}
	ctx, cancel := context.WithTimeout(f.ctx, 10*time.Second)
	defer cancel()
	d := direct{f, from}
	var (
		r   apiResp
		err error
		b   []byte
	)
	switch op {
	case "beat":
		err = d.beat(ctx)
	case "runtimes":
		err = d.putRuntimes(ctx, req.Data)
	case "receipt":
		err = d.putReceipt(ctx, req.ID, req.Data)
	case "get":
		b, err = d.getReceipt(ctx, req.Host, req.ID)
		r.Data = b
	case "route":
		r.Duplicate, err = d.route(ctx, req.To, req.ID, req.Data, req.TTL)
	case "index":
		var ix fleetIndex
		ix, err = d.index(ctx)
		r.Index = &ix
	case "runtimesof":
		b, err = d.runtimesOf(ctx, req.Host)
		r.Data = b
	case "audithead":
		var h auditHead
		if h, err = d.auditHead(ctx); err == nil {
			r.Data, _ = json.Marshal(h)
		}
	case "audit":
		var recs []json.RawMessage
		if err = json.Unmarshal(req.Data, &recs); err == nil {
			err = d.putAudit(ctx, recs)
		}
	case "mine":
		var l [][]byte
		l, err = d.mine(ctx)
		for _, x := range l {
			r.List = append(r.List, x)
		}
	default:
		err = errors.New("unknown request " + op)
	}
	if errors.Is(err, errNoReceipt) || errors.Is(err, jetstream.ErrKeyNotFound) {
		r.None, err = true, nil
	}
	if err != nil {
		r.Err = err.Error()
	}
	if m.Reply != "" {
		out, _ := json.Marshal(r)
		m.Respond(out) //nolint:errcheck // the requester times out
	}
}

// remote is the hub's API as a member asks it.
type remote struct{ f *Fleet }

func (r remote) call(ctx context.Context, op string, req apiReq) (apiResp, error) {
	b, _ := json.Marshal(req)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	m, err := r.f.nc.RequestWithContext(ctx, apiSubject(r.f.cfg.HostName, op), b)
	if err != nil {
		return apiResp{}, err
	}
	var resp apiResp
	if err := json.Unmarshal(m.Data, &resp); err != nil {
		return resp, err
	}
	if resp.Err != "" {
		return resp, errors.New("hub: " + resp.Err)
	}
	return resp, nil
}

func (r remote) beat(context.Context) error {
	return r.f.nc.Publish(apiSubject(r.f.cfg.HostName, "beat"), nil)
}

func (r remote) putRuntimes(ctx context.Context, list []byte) error {
	_, err := r.call(ctx, "runtimes", apiReq{Data: list})
	return err
}

func (r remote) putReceipt(ctx context.Context, id string, rec []byte) error {
	_, err := r.call(ctx, "receipt", apiReq{ID: id, Data: rec})
	return err
}

func (r remote) getReceipt(ctx context.Context, writer, id string) ([]byte, error) {
	resp, err := r.call(ctx, "get", apiReq{Host: writer, ID: id})
	if err == nil && resp.None {
		err = errNoReceipt
	}
	return resp.Data, err
}

func (r remote) route(ctx context.Context, to, id string, msg []byte, ttl time.Duration) (bool, error) {
	resp, err := r.call(ctx, "route", apiReq{To: to, ID: id, Data: msg, TTL: ttl})
	return resp.Duplicate, err
}

func (r remote) index(ctx context.Context) (fleetIndex, error) {
	resp, err := r.call(ctx, "index", apiReq{})
	if err != nil || resp.Index == nil {
		return fleetIndex{}, errors.Join(err, errors.New("hub: no index"))
	}
	return *resp.Index, nil
}

func (r remote) runtimesOf(ctx context.Context, host string) ([]byte, error) {
	resp, err := r.call(ctx, "runtimesof", apiReq{Host: host})
	return resp.Data, err
}

func (r remote) auditHead(ctx context.Context) (auditHead, error) {
	resp, err := r.call(ctx, "audithead", apiReq{})
	var h auditHead
	if err == nil {
		err = json.Unmarshal(resp.Data, &h)
	}
	return h, err
}

func (r remote) putAudit(ctx context.Context, recs []json.RawMessage) error {
	b, err := json.Marshal(recs)
	if err == nil {
		_, err = r.call(ctx, "audit", apiReq{Data: b})
	}
	return err
}

func (r remote) mine(ctx context.Context) ([][]byte, error) {
	resp, err := r.call(ctx, "mine", apiReq{})
	out := make([][]byte, 0, len(resp.List))
	for _, x := range resp.List {
		out = append(out, x)
	}
	return out, err
}
