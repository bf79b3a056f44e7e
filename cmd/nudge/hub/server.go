//go:build !nohubserver

package hub

import (
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// embedded is the hub's NATS server and the random password of its own (in-process)
// user, who alone may write the workspace claims.
type embedded struct {
	srv   *server.Server
	admin string
	opts  *server.Options // as last applied; a reload changes the members only
}

// startServer runs the embedded NATS server with JetStream on cfg.Listen, its store
// under stateDir/hub, one user per member from cfg.Users.
func startServer(cfg Config, stateDir string, log hclog.Logger) (*embedded, []identity, error) {
	host, portS, err := net.SplitHostPort(cfg.Listen)
	if err != nil {
		return nil, nil, fmt.Errorf("--hub-listen: %w", err)
	}
	port, err := strconv.Atoi(portS)
	if err != nil {
		return nil, nil, fmt.Errorf("--hub-listen: port %q", portS)
	}
	if port == 0 {
		port = server.RANDOM_PORT // NATS reads 0 as its default port
	}
	var members []identity
	if cfg.Users != "" {
		if members, err = readIdentities(cfg.Users); err != nil {
			return nil, nil, fmt.Errorf("--hub-users: %w", err)
		}
	} else {
		log.Warn("no --hub-users: no member can join this hub (it serves its own host only)")
	}
	e := &embedded{admin: randomSecret()}
	opts := &server.Options{
		ServerName: "nudge-" + cfg.HostName, Host: host, Port: port,
		JetStream: true, StoreDir: filepath.Join(stateDir, "hub"),
		NoSigs: true, MaxPayload: 4 << 20, PingInterval: cfg.Heartbeat * 2, MaxPingsOut: 3,
	}
	if err := e.setMembers(opts, cfg.HostName, members, log); err != nil {
		return nil, nil, err
	}
	if cfg.TLSCert != "" {
		if _, err := readPrivate(cfg.TLSKey); err != nil {
			return nil, nil, fmt.Errorf("--hub-tls-key: %w", err)
		}
		tc, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: cfg.TLSCert, KeyFile: cfg.TLSKey})
		if err != nil {
			return nil, nil, fmt.Errorf("hub tls: %w", err)
		}
		opts.TLSConfig, opts.TLSTimeout = tc, 5
	}
	if cfg.WebSocket != "" {
		if opts.Websocket, err = websocketOptions(cfg.WebSocket, opts.TLSConfig, log); err != nil {
			return nil, nil, err
		}
	}
	s, err := server.NewServer(opts)
	if err != nil {
		return nil, nil, fmt.Errorf("hub server: %w", err)
	}
	s.SetLoggerV2(natsLogger{log.Named("nats")}, false, false, false)
	s.Start()
	if !s.ReadyForConnections(30 * time.Second) {
		s.Shutdown()
		return nil, nil, fmt.Errorf("hub server on %s did not start", cfg.Listen)
	}
	e.srv, e.opts = s, opts
	return e, members, nil
}

// setMembers makes opts' users the hub's own and one per member.
func (e *embedded) setMembers(opts *server.Options, hostName string, members []identity, log hclog.Logger) error {
	opts.Users = []*server.User{{Username: "nudge-hub-" + hostName, Password: e.admin}}
	opts.Nkeys = nil
	for _, m := range members {
		if m.Name == hostName || strings.HasPrefix(m.Name, "nudge-hub-") {
			return fmt.Errorf("--hub-users: %q is the hub's own name: a member needs another", m.Name)
		}
		perms := memberPermissions(m.Name)
		if isNKey(m.Secret) {
			opts.Nkeys = append(opts.Nkeys, &server.NkeyUser{Nkey: m.Secret, Permissions: perms})
		} else {
			if !strings.HasPrefix(m.Secret, "$2") {
				log.Warn("a member's password is in the clear in --hub-users: prefer its bcrypt hash or an NKey", "member", m.Name)
			}
			opts.Users = append(opts.Users, &server.User{Username: m.Name, Password: m.Secret, Permissions: perms})
		}
	}
	return nil
}

// reload makes members the hub's members on the running server: NATS closes the
// connections of those no longer listed (or whose secret changed).
func (e *embedded) reload(hostName string, members []identity, log hclog.Logger) error {
	opts := e.opts.Clone()
	if err := e.setMembers(opts, hostName, members, log); err != nil {
		return err
	}
	if err := e.srv.ReloadOptions(opts); err != nil {
		return err
	}
	e.opts = opts
	return nil
}

// websocketOptions is the hub's WebSocket listener on addr: members behind firewalls
// that let only HTTPS out dial it (wss://), or an HTTPS ingress that ends TLS forwards to
// it (ws://). Members authenticate as on the TCP port.
func websocketOptions(addr string, tc *tls.Config, log hclog.Logger) (server.WebsocketOpts, error) {
	host, portS, err := net.SplitHostPort(addr)
	if err != nil {
		return server.WebsocketOpts{}, fmt.Errorf("--hub-websocket: %w", err)
	}
	port, err := strconv.Atoi(portS)
	if err != nil {
		return server.WebsocketOpts{}, fmt.Errorf("--hub-websocket: port %q", portS)
	}
	if port == 0 {
		port = server.RANDOM_PORT
	}
	ws := server.WebsocketOpts{Host: host, Port: port, TLSConfig: tc, Compression: true, HandshakeTimeout: 10 * time.Second}
	if tc == nil {
		ws.NoTLS = true
		log.Warn("the hub's WebSocket listener has no TLS (no --hub-tls-cert): use it only behind an HTTPS ingress that ends TLS, or on loopback")
	}
	return ws, nil
}

// inProcess is the server, for the hub's own connection (no TCP).
func (e *embedded) inProcess() nats.InProcessConnProvider { return e.srv }

// Addr is where the hub listens (its port resolved when --hub-listen asked for :0).
func (e *embedded) Addr() string { return e.srv.Addr().String() }

func (e *embedded) close() {
	e.srv.Shutdown()
	e.srv.WaitForShutdown()
}

// memberPermissions lets host h ask the hub's service (nudge.api.h.*: its heartbeat, its
// runtimes, its receipts, triggers it sends, reads) and other members (nudge.ctl.*.h.*),
// each with its own name in the subject; receive its own inbox, requests and triggers;
// and watch receipts being written. No JetStream API: a request to it could have the
// server reply onto any subject, a bucket's or the queue's among them.
func memberPermissions(h string) *server.Permissions {
	return &server.Permissions{
		Publish: &server.SubjectPermission{Allow: []string{apiSubject(h, "*"), ctlSubject("*", h, "*"), evSubject(h)}},
		Subscribe: &server.SubjectPermission{Allow: []string{inboxPrefix(h) + ".>", ctlFor(h), deliverSubject(h),
			"$KV." + bucketRcpt + ".>", evAll}},
		Response: &server.ResponsePermission{MaxMsgs: 1, Expires: time.Minute},
	}
}

func randomSecret() string {
	b := make([]byte, 24)
	rand.Read(b) //nolint:errcheck // crypto/rand does not fail
	return hex.EncodeToString(b)
}

// natsLogger writes the NATS server's log through the daemon's logger.
type natsLogger struct{ l hclog.Logger }

func (n natsLogger) Noticef(f string, v ...any) { n.l.Debug(fmt.Sprintf(f, v...)) }
func (n natsLogger) Warnf(f string, v ...any) {
	if msg := fmt.Sprintf(f, v...); !strings.HasPrefix(msg, "Plaintext passwords") { // the hub's own random one; members' are warned of above
		n.l.Warn(msg)
	}
}
func (n natsLogger) Fatalf(f string, v ...any) { n.l.Error(fmt.Sprintf(f, v...)) }
func (n natsLogger) Errorf(f string, v ...any) { n.l.Error(fmt.Sprintf(f, v...)) }
func (n natsLogger) Debugf(f string, v ...any) { n.l.Trace(fmt.Sprintf(f, v...)) }
func (n natsLogger) Tracef(f string, v ...any) { n.l.Trace(fmt.Sprintf(f, v...)) }
