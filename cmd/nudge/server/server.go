// Package server is nudge's API server: JSON over HTTP/1.1 on a unix socket (and
// /metrics on an optional TCP address). It owns the listener, the peer credentials of
// each connection, request ids, authentication (through an Authenticator) and every
// handler of the socket API. It holds no daemon state: it consumes the registry, the
// trigger pipeline, the store, the scheduler, the token authority, the event hub and the
// metrics through the small interfaces declared in deps.go, so it is tested on fakes.
//
// Main types: Server (Open, Err, Close), Config (DefaultConfig), Deps. The handlers are
// grouped by the part of the API they serve (runtimesAPI, lifecycleAPI, triggersAPI,
// auditAPI, tokensAPI), each a value holding the server.
//
// Errors are JSON {error_code, message} with a fitting status. An error that is not one
// of nudge's codes is answered "internal error" with the request id; its text is only
// logged, with that id.
package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nudgehq/nudge/cmd/nudge/api"
)

// Config is the server's configuration. DefaultConfig gives the defaults.
type Config struct {
	Socket      string // the API socket path; required
	MetricsAddr string // also serve /metrics on this TCP address; "" none

	ShutdownTimeout   time.Duration // how long Close waits for requests in flight
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	IdleTimeout       time.Duration
	MaxHeaderBytes    int
	MaxBody           int64 // largest request body; a prompt is limited separately

	Version string    // shown by /v1/health
	Paths   api.Paths // shown by /v1/health to an unrestricted caller
	Tmux    *api.Tmux // shown by /v1/health: the tmux version and what it degrades; nil unknown
	// RecordsUnread lists, for /v1/health, the runtimes whose record is not read (nil: none).
	RecordsUnread func() map[string]string
	Logger        hclog.Logger // nil: no logging
}

// DefaultConfig is the configuration serve starts from.
func DefaultConfig() Config {
	return Config{
		ShutdownTimeout: 5 * time.Second, ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout: time.Minute, IdleTimeout: 2 * time.Minute,
		MaxHeaderBytes: 64 << 10, MaxBody: 1 << 20,
	}
}

// Server is a running API server. Open starts it; Close stops it and joins its
// goroutines (one per listener).
type Server struct {
	cfg     Config
	deps    Deps
	log     hclog.Logger
	started time.Time

	srv, metrics *http.Server
	errc         chan error
	wg           sync.WaitGroup
	closeOnce    sync.Once
	closeErr     error
}

// New returns a server for cfg and deps that is not listening: Handler serves its API
// (tests use it with httptest). Open is New plus the listeners.
func New(cfg Config, deps Deps) *Server {
	s := &Server{cfg: cfg, deps: deps, log: cfg.Logger, started: time.Now(), errc: make(chan error, 2)}
	if s.log == nil {
		s.log = hclog.NewNullLogger()
	}
	if s.cfg.MaxBody <= 0 {
		s.cfg.MaxBody = DefaultConfig().MaxBody
	}
	return s
}

// Open listens on cfg.Socket (and cfg.MetricsAddr) and serves until Close.
func Open(cfg Config, deps Deps) (*Server, error) {
	if err := deps.check(); err != nil {
		return nil, err
	}
	s := New(cfg, deps)
	ln, err := Listen(cfg.Socket)
	if err != nil {
		return nil, err
	}
	s.srv = &http.Server{
		Handler: s.Handler(), ConnContext: connContext,
		ReadHeaderTimeout: cfg.ReadHeaderTimeout, ReadTimeout: cfg.ReadTimeout, IdleTimeout: cfg.IdleTimeout,
		MaxHeaderBytes: cfg.MaxHeaderBytes, ErrorLog: s.log.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}),
	}
	serve(s, s.srv, ln)
	if cfg.MetricsAddr != "" {
		mln, err := net.Listen("tcp", cfg.MetricsAddr)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("metrics listen: %w", err)
		}
		mux := http.NewServeMux()
		mux.HandleFunc("GET /metrics", s.handleMetrics)
		s.metrics = &http.Server{Handler: mux, ReadHeaderTimeout: cfg.ReadHeaderTimeout}
		serve(s, s.metrics, mln)
	}
	return s, nil
}

// serve runs srv on ln in a goroutine s.Close joins.
func serve(s *Server, srv *http.Server, ln net.Listener) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.errc <- err
		}
	}()
}

// Err delivers the error of a listener that failed (the daemon then stops).
func (s *Server) Err() <-chan error { return s.errc }

// Close stops accepting, waits up to cfg.ShutdownTimeout for requests in flight, joins
// the serving goroutines and removes the socket. Idempotent.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
		defer cancel()
		var errs []error
		for _, srv := range []*http.Server{s.srv, s.metrics} {
			if srv == nil {
				continue
			}
			if err := srv.Shutdown(ctx); err != nil {
				errs = append(errs, err, srv.Close()) // past the deadline: cut what is left
			}
		}
		s.wg.Wait()
		if s.srv != nil {
			if fi, err := os.Lstat(s.cfg.Socket); err == nil && fi.Mode()&os.ModeSocket != 0 {
				os.Remove(s.cfg.Socket)
			}
		}
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}
