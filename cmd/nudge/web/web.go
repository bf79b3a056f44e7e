// Package web is nudge's web view: a small app (HTML, CSS and JavaScript embedded in the
// binary, no build step) that shows the runtimes a browser's device token may see, live
// from the daemon's event stream, and lets it answer dialogs, pause, resume and send
// triggers as far as that token's verbs allow. It is served on a TCP address only when
// the operator asks for it (`nudge serve --web ADDR`).
//
// The main types:
//
//	Server    the web server: Open (listen) or New (a handler for tests), Pair, Close
//	Config    the address, TLS, the origins a page may come from; DefaultConfig, Validate
//	Deps      what it consumes: the API's handlers, the token authority, the registry
//	Pairing   a one-time link that gives one browser a device token (pair.go)
//	Terminal  a view of a pane (terminal.go; TmuxTerminal is tmux's), read-only
//	Keyboard  typing into a pane from the page, for a device with the type verb, once
//	          it switched typing on (keys.go; PaneKeys types through the daemon's own
//	          control connection, with the pane guard, never while nudge types there)
//
// The fleet page's cards come from package view, as nudge watch's rows do: all of them
// from GET /api/v1/fleet (fleet.go), then each changed one on the event stream (cards.go).
// Web Push (push.go) tells subscribed devices what package notify notifies, when the
// page is served over HTTPS; Server.Notify is its entry.
//
// Access (access.go): a browser holds a device token (an issued token whose subject is
// "web:NAME", listed and revoked with `nudge token`) in an HttpOnly, SameSite=Strict
// cookie set when it redeems a pairing link. Every /api request is authenticated by that
// cookie alone, re-checked on every request (a revoked token is refused at once; an open
// stream ends within Config.TokenCheck), and handed to the socket API's own handlers with
// the token as its bearer: the same verbs, rules, audit records and events as the CLI.
// Only the routes the app uses are reachable (APIRoutes). A request that changes anything
// must carry an Origin of this server (or one of Config.Origins); on a loopback address
// the Host must be a loopback name too (DNS rebinding).
package web

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/auth"
)

// Config configures the web server. Only Addr is required; every zero value is
// documented on its field.
type Config struct {
	// Addr is the TCP address to listen on (host:port). A host that is not a loopback
	// address (or is empty: every interface) needs TLS or Insecure.
	Addr string
	// TLSCert and TLSKey serve HTTPS with this certificate and key (PEM files); "" both
	// serves plain HTTP.
	TLSCert, TLSKey string
	// Insecure allows plain HTTP on an address that is not loopback (a private network
	// the operator trusts). false refuses it.
	Insecure bool
	// Origins are further origins the app may be served from, e.g. a TLS proxy in front
	// of a loopback address (`tailscale serve`: https://box.tailnet.ts.net). nil: only
	// this server's own address.
	Origins []string
	// PublicURL is the base of the links `nudge web pair` prints; "" derives it from the
	// address (and the first of Origins when there is one).
	PublicURL string
	// PairTTL is how long a pairing link works. 0 means 10 minutes.
	PairTTL time.Duration
	// MaxPending bounds the pairing links not yet redeemed. 0 means 16.
	MaxPending int
	// MaxTerminals bounds the terminal streams open at once. 0 means 8.
	MaxTerminals int
	// TokenCheck is how often an open stream checks its device token again (revoked,
	// expired). 0 means one second.
	TokenCheck time.Duration
	// VAPIDKeyFile keeps the key that signs Web Push requests (made there, 0600, when
	// missing). "" makes one for this run (browsers then subscribe again).
	VAPIDKeyFile string
	// PushServices are the hosts (with their subdomains) a push subscription may point
	// at. nil means DefaultPushServices.
	PushServices []string
	// PushSubject is the contact push services may reach the operator at (mailto: or
	// https:). "" means mailto:nudge@localhost.
	PushSubject string
	// PushClient posts to push services. nil means a client with a 10-second timeout.
	PushClient *http.Client
	// ShutdownTimeout is how long Close waits for requests in flight. 0 means 3 s.
	ShutdownTimeout time.Duration
	// Now is the clock. nil means time.Now.
	Now func() time.Time
	// Logger gets the server's messages. nil means none.
	Logger hclog.Logger
}

// DefaultConfig is the configuration serve starts from (Addr empty: no web view).
func DefaultConfig() Config {
	return Config{PairTTL: 10 * time.Minute, MaxPending: 16, MaxTerminals: 8, TokenCheck: time.Second,
		ShutdownTimeout: 3 * time.Second}
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.PairTTL <= 0 {
		c.PairTTL = d.PairTTL
	}
	if c.MaxPending <= 0 {
		c.MaxPending = d.MaxPending
	}
	if c.MaxTerminals <= 0 {
		c.MaxTerminals = d.MaxTerminals
	}
	if c.TokenCheck <= 0 {
		c.TokenCheck = d.TokenCheck
	}
	if c.ShutdownTimeout <= 0 {
		c.ShutdownTimeout = d.ShutdownTimeout
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	return c
}

// ErrNotLoopback is Validate's answer to plain HTTP on an address other machines reach.
var ErrNotLoopback = errors.New("the web view on an address that is not loopback needs TLS (--web-tls-cert, --web-tls-key) or --web-insecure; or keep it on 127.0.0.1 and put `tailscale serve` or an ssh tunnel in front")

// Validate checks the address, the TLS pair and the origins.
func (c Config) Validate() error {
	host, _, err := net.SplitHostPort(c.Addr)
	if err != nil {
		return fmt.Errorf("--web %q: want host:port (e.g. 127.0.0.1:8088): %w", c.Addr, err)
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return errors.New("--web-tls-cert and --web-tls-key go together")
	}
	if !Loopback(host) && c.TLSCert == "" && !c.Insecure {
		return fmt.Errorf("--web %q: %w", c.Addr, ErrNotLoopback)
	}
	for _, o := range c.Origins {
		if _, err := parseOrigin(o); err != nil {
			return fmt.Errorf("--web-origin %q: %w", o, err)
		}
	}
	return nil
}

// Loopback reports whether host (an address's host part) reaches this machine only.
func Loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Deps is what the web server consumes. API, Tokens and Runtimes are required.
type Deps struct {
	// API serves the socket API's routes (the server package's handlers), authenticating
	// a request by its Authorization header alone (TokenAuthenticator): the web server
	// puts the device token there.
	API      http.Handler
	Tokens   Tokens
	Runtimes Runtimes
	Terminal Terminal // nil: no terminal view
	// Keys types a viewer's keys into a pane (keys.go); nil: the terminal is read-only
	// for every device.
	Keys Keyboard
	// Audit records a pairing redeemed (a device token issued); nil records nothing.
	Audit func(rec nudge.AuditRecord)
}

// Tokens authenticates device tokens and issues them (satisfied by *auth.Authority).
type Tokens interface {
	AuthenticateToken(tok string) (auth.Caller, error)
	Issue(c auth.Caller, req auth.IssueRequest) (string, auth.Issued, error)
}

// Runtimes finds a runtime (satisfied by *panes.Registry).
type Runtimes interface {
	Get(id string) (nudge.Runtime, bool)
}

// TokenAuthenticator is the API's authenticator behind the web server: the bearer token
// alone, never the peer (there is none on TCP) or the shared --api-token, and only a
// device token (subject "web:..."; not a runtime's).
type TokenAuthenticator struct{ Tokens Tokens }

// Authenticate implements the server's Authenticator.
func (t TokenAuthenticator) Authenticate(_ auth.Peer, authorization string) (auth.Caller, error) {
	tok, ok := strings.CutPrefix(authorization, "Bearer ")
	if !ok || tok == "" {
		return auth.Caller{UID: -1}, nudge.NewError(nudge.Unauthorized, "this browser is not paired (nudge web pair)")
	}
	c, err := t.Tokens.AuthenticateToken(tok)
	if err != nil {
		return c, err
	}
	if !strings.HasPrefix(c.Subject, DeviceSubjectPrefix) || c.RuntimeID != "" {
		return auth.Caller{UID: -1}, nudge.NewError(nudge.Unauthorized, "not a device token (pair this browser with nudge web pair)")
	}
	return c, nil
}

// DeviceSubjectPrefix begins the subject of every device token.
const DeviceSubjectPrefix = "web:"

// Server is the web view. Open starts it; the daemon owns it and calls Close.
type Server struct {
	cfg   Config
	deps  Deps
	log   hclog.Logger
	pairs *pairings
	terms chan struct{} // a slot per open terminal stream
	push  *pusher       // nil: no Web Push (not over HTTPS)

	base      context.Context // every request's; cancelled by Close so streams end
	cancel    context.CancelFunc
	srv       *http.Server
	ln        net.Listener
	errc      chan error
	wg        sync.WaitGroup // the serving goroutine and every token watcher
	closeOnce sync.Once
}

// New returns a server that is not listening: Handler serves the app (tests use it with
// httptest). Open is New plus the listener.
func New(cfg Config, deps Deps) (*Server, error) {
	if deps.API == nil || deps.Tokens == nil || deps.Runtimes == nil {
		return nil, errors.New("web: Deps.API, Tokens and Runtimes are required")
	}
	cfg = cfg.withDefaults()
	s := &Server{cfg: cfg, deps: deps, log: cfg.Logger, terms: make(chan struct{}, cfg.MaxTerminals), errc: make(chan error, 1)}
	s.pairs = newPairings(cfg.MaxPending, cfg.PairTTL, cfg.Now)
	s.base, s.cancel = context.WithCancel(context.Background())
	var err error
	if s.push, err = newPusher(cfg); err != nil {
		return nil, fmt.Errorf("web push: %w", err)
	}
	if s.push != nil {
		s.wg.Add(1)
		go s.pushLoop()
	}
	return s, nil
}

// Open validates cfg, listens on cfg.Addr and serves until Close.
func Open(cfg Config, deps Deps) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s, err := New(cfg, deps)
	if err != nil {
		return nil, err
	}
	if s.ln, err = net.Listen("tcp", cfg.Addr); err != nil {
		return nil, fmt.Errorf("web listen: %w", err)
	}
	s.srv = &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		MaxHeaderBytes: 64 << 10, BaseContext: func(net.Listener) context.Context { return s.base },
		ErrorLog: s.log.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true})}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		var err error
		if cfg.TLSCert != "" {
			err = s.srv.ServeTLS(s.ln, cfg.TLSCert, cfg.TLSKey)
		} else {
			err = s.srv.Serve(s.ln)
		}
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.errc <- err
		}
	}()
	s.log.Info("web view", "url", s.URL())
	return s, nil
}

// Err delivers the error of a listener that failed.
func (s *Server) Err() <-chan error { return s.errc }

// URL is the base of the app's links: Config.PublicURL, else the first of Config.Origins,
// else the listening address.
func (s *Server) URL() string {
	switch {
	case s.cfg.PublicURL != "":
		return strings.TrimRight(s.cfg.PublicURL, "/")
	case len(s.cfg.Origins) > 0:
		return s.cfg.Origins[0]
	}
	addr := s.cfg.Addr
	if s.ln != nil {
		addr = s.ln.Addr().String()
	}
	scheme := "http"
	if s.cfg.TLSCert != "" {
		scheme = "https"
	}
	return scheme + "://" + addr
}

// Close ends every stream, stops the listener (waiting up to ShutdownTimeout) and joins
// the server's goroutines. Idempotent.
func (s *Server) Close() error {
	var err error
	s.closeOnce.Do(func() {
		s.cancel()
		if s.srv != nil {
			ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
			defer cancel()
			if err = s.srv.Shutdown(ctx); err != nil {
				err = errors.Join(err, s.srv.Close())
			}
		}
		s.wg.Wait()
	})
	return err
}
