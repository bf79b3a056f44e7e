package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/nudgehq/nudge"
	eventstream "github.com/nudgehq/nudge/cmd/nudge/events"
	"github.com/nudgehq/nudge/cmd/nudge/server"
	"github.com/nudgehq/nudge/inject"
	"github.com/nudgehq/nudge/panes"
	"github.com/nudgehq/nudge/store"
)

// Local is the daemon's own trigger pipeline, which the fleet hands the triggers of this
// host's workspaces to (satisfied by *inject.Pipeline). Submit must be idempotent by
// trigger id: a message the hub delivers again after a crash is the same trigger.
type Local interface {
	Submit(ctx context.Context, req inject.Request) (inject.Submitted, error)
	Get(id string) (nudge.Trigger, error)
	Wait(ctx context.Context, id string, cond func(nudge.Trigger) bool) (nudge.Trigger, error)
	Ack(ctx context.Context, id string) (nudge.Trigger, error)
}

// Triggers lists this host's stored triggers (satisfied by the store's Triggers).
type Triggers interface {
	ListTriggers(f store.TriggerFilter) ([]nudge.Trigger, error)
}

// Runtimes lists this host's runtimes (satisfied by *panes.Registry).
type Runtimes interface {
	List() []nudge.Runtime
}

// Events is the daemon's event stream (satisfied by *events.Hub): the receipts of the
// triggers this member routed to other hosts are published on it as they change.
type Events interface {
	Publish(ev eventstream.Event) eventstream.Event
}

// Deps is what a Fleet needs from the daemon.
type Deps struct {
	Local    Local
	Runtimes Runtimes
	Triggers Triggers               // this host's stored triggers, for another member's list; nil: none
	Audit    Audit                  // this host's audit log, sent to the hub; nil: not sent
	Events   Events                 // nil: none
	Dialogs  server.Dialogs         // answers this host's dialogs for other members; nil: none
	Manage   Manage                 // other members' acts on this host's runtimes; nil: none
	Kick     func(runtimeID string) // the pipeline goes on with a resumed runtime's triggers
	// Spawn spawns for member from in a workspace this host holds, this host's policy
	// judging the request; nil: no spawns for other members.
	Spawn    func(ctx context.Context, from string, req panes.SpawnRequest) (nudge.Runtime, error)
	StateDir string // the hub keeps its streams under StateDir/hub
	Logger   hclog.Logger
}

// Fleet is one daemon's part in the fleet. Open starts it; Close stops its goroutines,
// its connection and, on the hub, the embedded server. A nil *Fleet is no fleet.
type Fleet struct {
	cfg  Config
	deps Deps
	log  hclog.Logger
	srv  *embedded // the hub's server; nil on a member
	nc   *nats.Conn
	js   jetstream.JetStream
	kv   map[string]jetstream.KeyValue // the hub's only: members have no JetStream of their own
	api  hubAPI                        // the hub's service: direct on the hub, remote on a member

	resend    atomic.Bool   // send this host's runtimes at the next beat even if unchanged
	relay     *eventRelay   // the fleet's events (nil: no event stream)
	ready     chan struct{} // closed once the fleet is known: the fleet is up
	readyOnce sync.Once

	mu         sync.Mutex
	runtimes   map[string][]nudge.Runtime // other hosts' runtimes, by host
	alive      map[string]bool            // the hosts that are here, as the hub says
	versions   map[string]uint64          // the version of each host's runtime list
	seen       map[string]time.Time       // hub only: when each host's last heartbeat came
	claims     map[string]string          // workspace → host
	allowed    map[string][]string        // hub only: host → workspaces it may hold (nil: any)
	auditHeads map[string]auditHead       // hub only: each host's audit chain as the hub keeps it
	auditMu    sync.Mutex                 // hub only: one batch of audit records kept at a time
	ctlSlots   map[string]chan struct{}   // each asking member's requests under way here (onControlMsg); guarded by mu
	// consumers: hub only, each host's consumer of its triggers.
	consumers map[string]context.CancelFunc
	follow    map[string]bool // triggers whose receipts this host publishes

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// Open joins the fleet (or runs its hub) as cfg says; nil, nil when cfg is off.
func Open(ctx context.Context, cfg Config, deps Deps) (*Fleet, error) {
	if !cfg.On() {
		return nil, nil
	}
	if err := cfg.complete(); err != nil {
		return nil, err
	}
	f := &Fleet{cfg: cfg, deps: deps, log: deps.Logger, ready: make(chan struct{}),
		runtimes: map[string][]nudge.Runtime{}, alive: map[string]bool{}, seen: map[string]time.Time{}, versions: map[string]uint64{}, claims: map[string]string{}, follow: map[string]bool{}}
	if f.log == nil {
		f.log = hclog.NewNullLogger()
	}
	f.ctx, f.cancel = context.WithCancel(context.Background())
	if err := f.open(ctx); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func (f *Fleet) open(ctx context.Context) error {
	opts := []nats.Option{nats.Name("nudge " + f.cfg.HostName), nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond), nats.CustomInboxPrefix(inboxPrefix(f.cfg.HostName)),
		nats.RetryOnFailedConnect(true), nats.PingInterval(f.cfg.Heartbeat * 2),
		nats.IgnoreAuthErrorAbort(), // a member taken out of the hub's users file comes back when put in again
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { f.log.Warn("hub", "err", err) }),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if f.ctx.Err() == nil {
				f.log.Warn("hub link down", "err", err)
			}
		}),
		nats.ReconnectHandler(func(*nats.Conn) {
			f.log.Info("hub link up again")
			f.resend.Store(true) // the hub may have dropped this host's runtimes meanwhile (taken out of its members)
		})}
	url := f.cfg.URL
	if f.cfg.Listen != "" {
		srv, members, err := startServer(f.cfg, f.deps.StateDir, f.log)
		if err != nil {
			return err
		}
		f.srv, f.allowed = srv, map[string][]string{}
		for _, m := range members {
			f.allowed[m.Name] = m.Workspaces
		}
		url = ""
		opts = append(opts, nats.InProcessServer(srv.inProcess()), nats.UserInfo("nudge-hub-"+f.cfg.HostName, srv.admin))
	} else {
		o, err := memberAuth(f.cfg)
		if err != nil {
			return err
		}
		opts = append(opts, o...)
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return fmt.Errorf("hub connect: %w", err)
	}
	f.nc = nc
	if f.js, err = jetstream.New(nc); err != nil {
		return err
	}
	if f.srv == nil {
		// A member serves its own host at once; it joins the fleet once the hub answers.
		f.api = remote{f}
		return f.startMember()
	}
	if err := f.createStreams(ctx); err != nil {
		return err
	}
	return f.startHub(ctx)
}

// memberAuth is a member's identity, read from its --hub-credentials file, and the CA
// it checks the hub's certificate against.
func memberAuth(cfg Config) ([]nats.Option, error) {
	ids, err := readIdentities(cfg.Credentials)
	if err != nil {
		return nil, fmt.Errorf("--hub-credentials: %w", err)
	}
	id := ids[0]
	if id.Name != cfg.HostName {
		return nil, fmt.Errorf("--hub-credentials names %q, but this host is %q (--host-name)", id.Name, cfg.HostName)
	}
	var opts []nats.Option
	if isSeed(id.Secret) {
		kp, err := nkeys.FromSeed([]byte(id.Secret))
		if err != nil {
			return nil, fmt.Errorf("--hub-credentials: nkey seed: %w", err)
		}
		pub, _ := kp.PublicKey()
		opts = append(opts, nats.Nkey(pub, kp.Sign))
	} else {
		opts = append(opts, nats.UserInfo(id.Name, id.Secret))
	}
	if cfg.CA != "" {
		opts = append(opts, nats.RootCAs(cfg.CA))
	}
	return opts, nil
}

// createStreams makes the hub's stream and buckets (the hub only; members find them).
func (f *Fleet) createStreams(ctx context.Context) error {
	_, err := f.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name: triggerStream, Subjects: []string{"nudge.trig.*.*"}, Retention: jetstream.WorkQueuePolicy,
		Storage: jetstream.FileStorage, Duplicates: 24 * time.Hour, AllowMsgTTL: true, MaxAge: 7 * 24 * time.Hour,
	})
	if err != nil {
		return fmt.Errorf("hub stream: %w", err)
	}
	if _, err := f.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name: auditStream, Subjects: []string{auditSubject("*")}, Storage: jetstream.FileStorage,
		MaxAge: auditKeep, Duplicates: 10 * time.Minute,
	}); err != nil {
		return fmt.Errorf("hub audit stream: %w", err)
	}
	for _, kc := range []jetstream.KeyValueConfig{
		{Bucket: bucketRTs, Storage: jetstream.FileStorage},
		{Bucket: bucketWS, Storage: jetstream.FileStorage},
		{Bucket: bucketRcpt, Storage: jetstream.FileStorage, TTL: 7 * 24 * time.Hour},
	} {
		if _, err := f.js.CreateOrUpdateKeyValue(ctx, kc); err != nil {
			return fmt.Errorf("hub bucket %s: %w", kc.Bucket, err)
		}
	}
	return nil
}

// startHub binds the hub's buckets and starts its loops: its service to the members, the
// watches of the runtime lists and the claims, the judge of who is here, the deliveries.
func (f *Fleet) startHub(ctx context.Context) error {
	kvs := map[string]jetstream.KeyValue{}
	for _, b := range []string{bucketRTs, bucketWS, bucketRcpt} {
		kv, err := f.js.KeyValue(ctx, b)
		if err != nil {
			return err
		}
		kvs[b] = kv
	}
	f.kv, f.api = kvs, direct{f, f.cfg.HostName}
	if _, err := f.nc.Subscribe(apiSubject("*", "*"), func(m *nats.Msg) { f.goLoop(func() { f.serve(m) }) }); err != nil {
		return err
	}
	if err := f.deliver(ctx); err != nil {
		return err
	}
	// The hub is up once both buckets' present values are in: until then its claims are
	// partial (a restarted hub), and neither it nor a member may take a workspace it has
	// not read yet for one held by no host.
	var loading sync.WaitGroup
	loading.Add(2)
	f.goLoop(func() { f.watch(bucketRTs, f.onRuntimes, loading.Done) })
	f.goLoop(func() { f.watch(bucketWS, f.onClaim, loading.Done) })
	f.goLoop(func() {
		loading.Wait()
		f.readyOnce.Do(func() { close(f.ready) })
	})
	f.goLoop(f.judge)
	if f.cfg.Users != "" {
		f.goLoop(f.watchUsers)
	}
	return f.startCommon()
}

// startMember starts a member's loops; it is up once the hub's index came.
func (f *Fleet) startMember() error {
	if _, err := f.nc.Subscribe(deliverSubject(f.cfg.HostName), f.onDeliver); err != nil {
		return err
	}
	return f.startCommon()
}

func (f *Fleet) startCommon() error {
	if _, err := f.nc.Subscribe(ctlFor(f.cfg.HostName), f.onControlMsg); err != nil {
		return err
	}
	if err := f.startEvents(); err != nil {
		return err
	}
	f.goLoop(f.relayAudit)
	f.goLoop(f.beat)
	f.resumeFollows()
	return nil
}

// maxCtlPerMember bounds the requests of one member handled here at once: one that sends
// more (a stuck or hostile daemon) is told to try again, not given a goroutine each.
const maxCtlPerMember = 32

// onControlMsg handles another member's request on a goroutine of its own, within the
// member's slots.
func (f *Fleet) onControlMsg(m *nats.Msg) {
	from := token(m.Subject, 3)
	f.mu.Lock()
	if f.ctlSlots == nil {
		f.ctlSlots = map[string]chan struct{}{}
	}
	slots, ok := f.ctlSlots[from]
	if !ok {
		slots = make(chan struct{}, maxCtlPerMember)
		f.ctlSlots[from] = slots
	}
	f.mu.Unlock()
	select {
	case slots <- struct{}{}:
	default:
		if strings.HasPrefix(m.Reply, inboxPrefix(from)+".") {
			b, _ := json.Marshal(ctlReply{Code: nudge.Unavailable, Message: "host " + f.cfg.HostName + " is busy with " + from + "'s requests: try again"})
			m.Respond(b) //nolint:errcheck // the requester times out
		}
		return
	}
	f.goLoop(func() {
		defer func() { <-slots }()
		f.onControl(m)
	})
}

// up reports whether the fleet is joined (its buckets bound).
func (f *Fleet) up() bool {
	select {
	case <-f.ready:
		return true
	default:
		return false
	}
}

func (f *Fleet) goLoop(fn func()) {
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		fn()
	}()
}

// Host is this host's name in the fleet.
func (f *Fleet) Host() string {
	if f == nil {
		return ""
	}
	return f.cfg.HostName
}

// Addr is the hub's listening address ("" on a member).
func (f *Fleet) Addr() string {
	if f == nil || f.srv == nil {
		return ""
	}
	return f.srv.Addr()
}

// Close leaves the fleet: the loops end, the connection drains, the hub's server stops.
// Open triggers stay in the stream and the local store. Idempotent.
func (f *Fleet) Close() error {
	if f == nil || f.cancel == nil {
		return nil
	}
	f.stopEvents()
	f.cancel()
	if f.nc != nil {
		f.nc.Close()
	}
	f.wg.Wait()
	if f.srv != nil {
		f.srv.close()
	}
	return nil
}

// key is an id as a bucket key's last token: ids may hold dots and slashes.
func key(id string) string {
	var b strings.Builder
	for _, r := range id {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		default:
			fmt.Fprintf(&b, "=%02X", r)
		}
	}
	return b.String()
}
