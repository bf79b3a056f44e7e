package web

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/webpush"
)

// Web Push: a paired browser whose page is served over HTTPS may subscribe (its service
// worker's pushManager) and is then told, through its vendor's push service, when an
// agent needs its operator: the notifications of package notify (NEEDS_CONFIRMATION,
// ERROR, a failed trigger, a finished task), each only to the devices whose token sees
// its workspace. Subscriptions are kept per device token, in memory (the page subscribes
// again on each visit): a token revoked or expired loses its subscriptions at the next
// notification, and a push service that says a subscription is gone loses that one.
//
// The daemon posts only to the push services named in Config.PushServices: a device
// cannot make it post to an address of its choosing.

// DefaultPushServices are the hosts (and their subdomains) of the browsers' push
// services: Chrome's and Edge's (FCM), Firefox's (autopush), Safari's, Windows'.
var DefaultPushServices = []string{"fcm.googleapis.com", "push.services.mozilla.com", "push.apple.com", "notify.windows.com"}

const (
	// maxPushDevices bounds the device tokens with subscriptions, and maxPushSubs each
	// one's subscriptions (a new one replaces the oldest).
	maxPushDevices = 64
	maxPushSubs    = 4
	// pushQueue bounds the notifications waiting to be pushed; more are dropped.
	pushQueue = 64
	// maxPushText bounds a notification's text (runes); a push carries 4 KB at most.
	maxPushText = 500
	// pushTimeout bounds one post to a push service.
	pushTimeout = 10 * time.Second
)

// pushDevice is one device token's subscriptions. tok is the token itself (kept in
// memory only) so that each push checks it is still valid.
type pushDevice struct {
	tok  string
	subs []webpush.Subscription
}

// pushNote is one notification to push.
type pushNote struct{ workspace, text string }

// pusher is the server's Web Push state; nil when push is off.
type pusher struct {
	sender *webpush.Sender
	hosts  []string
	q      chan pushNote

	mu      sync.Mutex
	devices map[string]*pushDevice // token id ->
	done    func()                 // tests: called after each notification is pushed
}

// PushEnabled reports whether the web view offers Web Push: its pages come over HTTPS
// (its own TLS, or an https origin in front of it).
func (c Config) PushEnabled() bool {
	if c.TLSCert != "" {
		return true
	}
	for _, o := range c.Origins {
		if strings.HasPrefix(strings.ToLower(o), "https://") {
			return true
		}
	}
	return false
}

// newPusher reads (or makes and keeps) the VAPID key. It returns nil when push is off.
func newPusher(cfg Config) (*pusher, error) {
	if !cfg.PushEnabled() {
		return nil, nil
	}
	v, err := loadVAPID(cfg.VAPIDKeyFile)
	if err != nil {
		return nil, err
	}
	hosts := cfg.PushServices
	if hosts == nil {
		hosts = DefaultPushServices
	}
	return &pusher{sender: &webpush.Sender{VAPID: v, Subject: cfg.PushSubject, Client: cfg.PushClient}, hosts: hosts,
		q: make(chan pushNote, pushQueue), devices: map[string]*pushDevice{}}, nil
}

// loadVAPID reads the key at path, or makes one and writes it there (0600); path ""
// makes one for this run only.
func loadVAPID(path string) (*webpush.VAPID, error) {
	if path != "" {
		if b, err := os.ReadFile(path); err == nil {
			return webpush.ParseVAPID(b)
		} else if !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	v, err := webpush.NewVAPID()
	if err != nil || path == "" {
		return v, err
	}
	b, err := v.Marshal()
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return nil, err
	}
	return v, nil
}

// allowed reports whether endpoint is on one of the push services.
func (p *pusher) allowed(endpoint string) bool {
	u, err := url.Parse(endpoint)
	if err != nil {
		return false
	}
	h := strings.ToLower(u.Hostname())
	for _, a := range p.hosts {
		if a = strings.ToLower(a); h == a || strings.HasSuffix(h, "."+a) {
			return true
		}
	}
	return false
}

// Notify pushes text to every subscribed device whose token sees workspace (auth's
// Caller.Sees: "" is for tokens of every workspace). It never blocks: a notification that finds the queue full is dropped.
// The daemon's notifier calls it (notify.Config.Push).
func (s *Server) Notify(workspace, text string) {
	if s.push == nil {
		return
	}
	select {
	case s.push.q <- pushNote{workspace, text}:
	default:
		s.log.Warn("web push dropped: queue full")
	}
}

// pushLoop pushes the queued notifications until Close.
func (s *Server) pushLoop() {
	defer s.wg.Done()
	for {
		select {
		case <-s.base.Done():
			return
		case n := <-s.push.q:
			s.pushOne(n)
			if s.push.done != nil {
				s.push.done()
			}
		}
	}
}

// pushOne sends n to each device that may see its workspace, dropping the devices whose
// token is refused now and the subscriptions their service says are gone.
func (s *Server) pushOne(n pushNote) {
	p := s.push
	text := n.text // it holds what the agent's screen said: cut to fit a push
	if r := []rune(text); len(r) > maxPushText {
		text = string(r[:maxPushText-1]) + "…"
	}
	payload, _ := json.Marshal(map[string]string{"title": "nudge", "body": text, "workspace": n.workspace})
	p.mu.Lock()
	devs := make(map[string]pushDevice, len(p.devices))
	for id, d := range p.devices {
		devs[id] = pushDevice{d.tok, append([]webpush.Subscription(nil), d.subs...)}
	}
	p.mu.Unlock()
	for id, d := range devs {
		c, err := s.deps.Tokens.AuthenticateToken(d.tok)
		if err != nil {
			p.mu.Lock()
			delete(p.devices, id)
			p.mu.Unlock()
			s.log.Info("web push: device dropped", "token_id", id, "why", err)
			continue
		}
		if !c.Sees(n.workspace) {
			continue
		}
		for _, sub := range d.subs {
			ctx, cancel := context.WithTimeout(s.base, pushTimeout)
			err := p.sender.Send(ctx, sub, webpush.Message{Payload: payload, Urgency: "high", TTL: time.Hour})
			cancel()
			if errors.Is(err, webpush.ErrGone) {
				p.forget(id, sub.Endpoint)
			} else if err != nil {
				s.log.Warn("web push failed", "token_id", id, "err", err)
			}
		}
	}
}

// forget drops a device's subscription to endpoint.
func (p *pusher) forget(tokenID, endpoint string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	d := p.devices[tokenID]
	if d == nil {
		return
	}
	d.subs = slices.DeleteFunc(d.subs, func(s webpush.Subscription) bool { return s.Endpoint == endpoint })
	if len(d.subs) == 0 {
		delete(p.devices, tokenID)
	}
}

// PushInfo is GET /api/v1/push: whether push is offered and the key to subscribe with.
type PushInfo struct {
	Enabled bool   `json:"enabled"`
	Key     string `json:"key,omitempty"` // the VAPID public key (applicationServerKey)
}

func (s *Server) handlePushInfo(w http.ResponseWriter, _ *http.Request) {
	if s.push == nil {
		writeJSON(w, http.StatusOK, PushInfo{})
		return
	}
	writeJSON(w, http.StatusOK, PushInfo{Enabled: true, Key: s.push.sender.VAPID.PublicKey()})
}

// handleSubscribe is POST /api/v1/push/subscribe {endpoint, keys}: this device is told
// through that subscription from now on (any device that may read may subscribe).
func (s *Server) handleSubscribe(w http.ResponseWriter, r *http.Request) {
	p := s.push
	if p == nil {
		fail(w, nudge.NewError(nudge.NotFound, "web push needs the page over HTTPS (--web-tls-cert, or an https --web-origin)"))
		return
	}
	var sub webpush.Subscription
	if err := json.NewDecoder(io.LimitReader(r.Body, 8<<10)).Decode(&sub); err != nil {
		fail(w, nudge.NewError(nudge.BadRequest, "want a PushSubscription: {endpoint, keys: {p256dh, auth}}"))
		return
	}
	if err := sub.Check(); err != nil {
		fail(w, nudge.NewError(nudge.BadRequest, err.Error()))
		return
	}
	if !p.allowed(sub.Endpoint) {
		fail(w, nudge.NewError(nudge.Forbidden, "not a known push service: "+sub.Endpoint))
		return
	}
	c := caller(r)
	tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	p.mu.Lock()
	defer p.mu.Unlock()
	d := p.devices[c.TokenID]
	if d == nil {
		if len(p.devices) >= maxPushDevices {
			fail(w, nudge.NewError(nudge.Forbidden, "too many devices subscribed"))
			return
		}
		d = &pushDevice{tok: tok}
		p.devices[c.TokenID] = d
	}
	d.subs = slices.DeleteFunc(d.subs, func(o webpush.Subscription) bool { return o.Endpoint == sub.Endpoint })
	if len(d.subs) >= maxPushSubs {
		d.subs = d.subs[1:]
	}
	d.subs = append(d.subs, sub)
	writeJSON(w, http.StatusOK, map[string]any{"subscribed": true})
}

// subscriptions is how many subscriptions the devices hold.
func (p *pusher) subscriptions() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, d := range p.devices {
		n += len(d.subs)
	}
	return n
}
