// Package classifier holds the settings of the optional LLM classifier of seed 002: a
// screen the readiness packs cannot classify is sent to an OpenAI-compatible
// chat-completions endpoint (OpenRouter, for example). It is off unless URL is set. The
// API key comes from the environment (detector.DefaultAPIKeyEnv) or, as seed 002 says,
// from a .env file (LoadKey), never from a flag: a flag shows in ps. It is held in the
// Config only: never logged, and never put back into an environment a child inherits.
package classifier

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/nudgehq/nudge/detector"
)

// Config is the classifier's settings (nudge serve's --llm-* flags).
type Config struct {
	URL     string        // "" = off
	Model   string        // model name sent with each request
	Timeout time.Duration // one attempt
	Retries int           // retries after a 5xx, 429, timeout or connection error
	// EnvFile is the .env file the key is read from when the environment has none ("":
	// .env in the directory LoadKey is given, $XDG_CONFIG_HOME/nudge for nudge serve).
	EnvFile string
	key     string // read by LoadKey

}

// Defaults is the classifier off, with the model, timeout and retries it uses once on.
func Defaults() Config {
	return Config{Model: "openai/gpt-4o-mini", Timeout: 20 * time.Second, Retries: 1}
}

// Flags adds the --llm-* flags to fs.
func Flags(fs *pflag.FlagSet, c *Config) {
	fs.StringVar(&c.URL, "llm-url", c.URL, "chat-completions URL of an LLM that classifies the screens the packs cannot, e.g. https://openrouter.ai/api/v1/chat/completions; off when empty. The API key is read from $"+detector.DefaultAPIKeyEnv+" (never a flag)")
	fs.StringVar(&c.Model, "llm-model", c.Model, "model the LLM classifier asks")
	fs.DurationVar(&c.Timeout, "llm-timeout", c.Timeout, "longest one LLM classifier request may take (the packs' verdict stands meanwhile)")
	fs.IntVar(&c.Retries, "llm-retries", c.Retries, "retries of an LLM classifier request after a 5xx, 429, timeout or connection error")
	fs.StringVar(&c.EnvFile, "llm-env-file", c.EnvFile, ".env file with the LLM classifier's key ("+detector.DefaultAPIKeyEnv+"= or OPENROUTER_API_KEY=), read when $"+detector.DefaultAPIKeyEnv+" is unset (default $XDG_CONFIG_HOME/nudge/.env, else ~/.config/nudge/.env; a missing one is fine); a regular file only its owner can read")
}

// LoadKey reads the classifier's API key and takes it out of the process's own
// environment, so that nothing the daemon starts inherits it. With the classifier on and
// no key in the environment, it reads the key from EnvFile (else dir/.env), as seed 002
// says: NUDGE_LLM_API_KEY, else OPENROUTER_API_KEY. A missing file is no error; one that
// is not a regular file, that others can read or write, or that is larger than
// maxEnvFile is refused. The key is never set in the environment.
func (c *Config) LoadKey(dir string) error {
	if k, ok := os.LookupEnv(detector.DefaultAPIKeyEnv); ok {
		c.key = k
		os.Unsetenv(detector.DefaultAPIKeyEnv) //nolint:errcheck // read already; never inherited
		return nil
	}
	if c.URL == "" {
		return nil
	}
	path := c.EnvFile
	if path == "" {
		if dir == "" {
			return nil
		}
		path = filepath.Join(dir, ".env")
	}
	k, err := readEnvFile(path)
	if err != nil || k == "" {
		return err
	}
	c.key = k
	return nil
}

// maxEnvFile bounds a .env file.
const maxEnvFile = 64 << 10

// envKeys are the names a .env file may give the key by, in order of preference.
var envKeys = []string{detector.DefaultAPIKeyEnv, "OPENROUTER_API_KEY"}

// readEnvFile returns the key a .env file gives ("" when it gives none, or is missing).
// Its errors name the file, never its contents.
func readEnvFile(path string) (string, error) {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("llm env file: %w", err)
	case !fi.Mode().IsRegular():
		return "", fmt.Errorf("llm env file %s: not a regular file", path)
	case fi.Mode().Perm()&0o077 != 0:
		return "", fmt.Errorf("llm env file %s: mode %04o lets others read or write the key (chmod 600)", path, fi.Mode().Perm())
	case fi.Size() > maxEnvFile:
		return "", fmt.Errorf("llm env file %s: larger than %d bytes", path, maxEnvFile)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return "", fmt.Errorf("llm env file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxEnvFile+1))
	if err != nil {
		return "", fmt.Errorf("llm env file %s: read failed", path)
	}
	if len(b) > maxEnvFile {
		return "", fmt.Errorf("llm env file %s: larger than %d bytes", path, maxEnvFile)
	}
	vals := parseEnv(string(b))
	for _, name := range envKeys {
		if v := vals[name]; v != "" {
			return v, nil
		}
	}
	return "", nil
}

// parseEnv reads NAME=value lines (an optional "export ", a value in single or double
// quotes, # comments); other lines are skipped.
func parseEnv(s string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(strings.TrimSuffix(line, "\r"))
		line = strings.TrimPrefix(line, "export ")
		name, v, ok := strings.Cut(line, "=")
		if !ok || strings.HasPrefix(name, "#") {
			continue
		}
		name, v = strings.TrimSpace(name), strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		} else if i := strings.Index(v, " #"); i >= 0 {
			v = strings.TrimSpace(v[:i])
		}
		out[name] = v
	}
	return out
}

// KeySet says whether an API key was found.
func (c *Config) KeySet() bool { return c.key != "" }

// Validate checks the settings; a key is never sent in clear to another host.
func (c *Config) Validate() error {
	if c.URL == "" {
		return nil
	}
	u, err := url.Parse(c.URL)
	switch {
	case err != nil:
		return fmt.Errorf("--llm-url: %w", err)
	case u.Scheme != "https" && u.Scheme != "http", u.Host == "":
		return fmt.Errorf("--llm-url %q: want an http(s) URL", c.URL)
	case u.Scheme == "http" && !isLoopback(u.Hostname()):
		return fmt.Errorf("--llm-url %q: plain http would send the screen and the API key in clear; use https (http is for loopback only)", c.URL)
	case c.Model == "":
		return errors.New("--llm-model is empty")
	case c.Timeout <= 0:
		return errors.New("--llm-timeout must be positive")
	case c.Retries < 0:
		return errors.New("--llm-retries must not be negative")
	}
	return nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// New returns the classifier, or nil when it is off.
func (c *Config) New() (*detector.LLM, error) {
	if c.URL == "" {
		return nil, nil
	}
	return detector.NewLLM(&detector.LLMConfig{Endpoint: c.URL, Model: c.Model, APIKey: c.key,
		Timeout: c.Timeout, Retries: c.Retries})
}

// Endpoint is the URL for the log: no user info, no query (either may hold a secret).
func (c *Config) Endpoint() string {
	u, err := url.Parse(c.URL)
	if err != nil {
		return "(unparsable)"
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
}
