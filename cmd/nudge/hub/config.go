package hub

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// Config is the hub's part of `nudge serve`. The zero value is off: no hub, no member.
type Config struct {
	Listen      string        // --hub-listen: run the hub (embedded NATS server) on this TCP address
	WebSocket   string        // --hub-websocket: the hub also takes members over WebSocket on this address
	URL         string        // --hub: join the hub at this nats:// (or tls://) URL as a member
	HostName    string        // --host-name: this host's name in the fleet ("": the machine's short host name)
	Users       string        // --hub-users: the members' identities (hub only; NAME SECRET [WS,...] per line, 0600)
	Credentials string        // --hub-credentials: this member's identity (NAME SECRET, 0600)
	TLSCert     string        // --hub-tls-cert: the hub's certificate (PEM); with TLSKey the hub speaks TLS
	TLSKey      string        // --hub-tls-key: its key (PEM, 0600)
	CA          string        // --hub-ca: a member trusts the hub's certificate from this CA bundle
	MaxQueue    time.Duration // --hub-max-queue: how long a trigger waits for a host that is away
	Heartbeat   time.Duration // --hub-heartbeat: a member's beat; one missing 3 beats is away
}

// DefaultConfig is the hub off, with its durations set.
func DefaultConfig() Config {
	return Config{MaxQueue: time.Hour, Heartbeat: 2 * time.Second}
}

// Flags binds the hub's serve flags to c.
func Flags(fs *pflag.FlagSet, c *Config) {
	fs.StringVar(&c.Listen, "hub-listen", c.Listen, "run the fleet's hub in this daemon: an embedded NATS server with JetStream on this address (e.g. 0.0.0.0:4222); see docs/hub.md")
	fs.StringVar(&c.WebSocket, "hub-websocket", c.WebSocket, "the hub also takes members over WebSocket on this address (wss:// with --hub-tls-cert; plain ws:// behind an HTTPS ingress that ends TLS)")
	fs.StringVar(&c.URL, "hub", c.URL, "join the fleet's hub at this URL as a member (nats://HOST:4222, tls://HOST:4222, wss://HOST/PATH, ws://HOST:PORT)")
	fs.StringVar(&c.HostName, "host-name", c.HostName, "this host's name in the fleet (default: the machine's short host name)")
	fs.StringVar(&c.Users, "hub-users", c.Users, "the hub's file of member identities, one per line: NAME PASSWORD|NKEY [WORKSPACE,...] (mode 0600)")
	fs.StringVar(&c.Credentials, "hub-credentials", c.Credentials, "this member's identity file: NAME PASSWORD|NKEY-SEED (mode 0600)")
	fs.StringVar(&c.TLSCert, "hub-tls-cert", c.TLSCert, "the hub's TLS certificate (PEM)")
	fs.StringVar(&c.TLSKey, "hub-tls-key", c.TLSKey, "the hub's TLS key (PEM, mode 0600)")
	fs.StringVar(&c.CA, "hub-ca", c.CA, "CA bundle a member checks the hub's certificate against")
	fs.DurationVar(&c.MaxQueue, "hub-max-queue", c.MaxQueue, "how long a trigger for a host that is away waits in the hub before it fails (DEFER_TIMEOUT)")
	fs.DurationVar(&c.Heartbeat, "hub-heartbeat", c.Heartbeat, "a host's heartbeat to the hub; one silent for 3 beats is away")
}

// On reports whether the daemon takes part in a fleet.
func (c Config) On() bool { return c.Listen != "" || c.URL != "" }

// validName is a host name as it goes into subjects and keys.
var validName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// complete fills the host name and checks the config.
func (c *Config) complete() error {
	switch {
	case c.Listen != "" && c.URL != "":
		return errors.New("--hub-listen and --hub are exclusive: the hub is a member already")
	case c.URL != "" && c.Credentials == "":
		return errors.New("--hub needs --hub-credentials (this host's identity)")
	case c.WebSocket != "" && c.Listen == "":
		return errors.New("--hub-websocket is the hub's: give --hub-listen too")
	case c.URL != "" && !validURL(c.URL):
		return fmt.Errorf("--hub %q: want HOST:PORT with nats://, tls://, ws:// or wss:// (or none)", c.URL)
	case (c.TLSCert == "") != (c.TLSKey == ""):
		return errors.New("--hub-tls-cert and --hub-tls-key go together")
	case c.MaxQueue <= 0 || c.Heartbeat <= 0:
		return errors.New("--hub-max-queue and --hub-heartbeat must be positive")
	}
	if c.HostName == "" {
		h, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("host name: %w (give --host-name)", err)
		}
		c.HostName, _, _ = strings.Cut(h, ".")
	}
	if !validName.MatchString(c.HostName) {
		return fmt.Errorf("--host-name %q: want 1-64 of [A-Za-z0-9_-]", c.HostName)
	}
	return nil
}

// validURL reports whether u is a hub URL a member can dial: HOST:PORT, or one with a
// scheme NATS speaks (a comma-separated list: each).
func validURL(u string) bool {
	for _, one := range strings.Split(u, ",") {
		scheme, rest, ok := strings.Cut(strings.TrimSpace(one), "://")
		if !ok {
			rest = scheme
		} else if scheme != "nats" && scheme != "tls" && scheme != "ws" && scheme != "wss" {
			return false
		}
		if rest == "" {
			return false
		}
	}
	return true
}

// identity is one line of an identity file: a host's name, its secret (a password, a
// bcrypt hash of one, an NKey public key or, in a member's own file, an NKey seed) and
// the workspaces it may hold (nil: any).
type identity struct {
	Name, Secret string
	Workspaces   []string
}

// isNKey reports whether s is an NKey user public key (U..., 56 characters).
func isNKey(s string) bool { return len(s) == 56 && s[0] == 'U' }

// isSeed reports whether s is an NKey user seed (SU...).
func isSeed(s string) bool { return strings.HasPrefix(s, "SU") }

// readIdentities reads an identity file: a regular file only its owner can read, one
// identity a line, # comments.
func readIdentities(path string) ([]identity, error) {
	b, err := readPrivate(path)
	if err != nil {
		return nil, err
	}
	var out []identity
	for n, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 2 || len(f) > 3 || !validName.MatchString(f[0]) {
			return nil, fmt.Errorf("%s:%d: want NAME SECRET [WORKSPACE,...]", path, n+1)
		}
		id := identity{Name: f[0], Secret: f[1]}
		if len(f) == 3 && f[2] != "*" {
			id.Workspaces = strings.Split(f[2], ",")
		}
		out = append(out, id)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no identity", path)
	}
	return out, nil
}

// readPrivate reads a regular file of mode 0600 (or stricter).
func readPrivate(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%s must be a regular file with mode 0600 (is %s)", path, fi.Mode())
	}
	return os.ReadFile(path)
}
