// Package classifier holds the settings of the optional LLM classifier of seed 002: a
// screen the readiness packs cannot classify is sent to an OpenAI-compatible
// chat-completions endpoint (OpenRouter, for example). It is off unless URL is set. The
// API key comes from the environment only (detector.DefaultAPIKeyEnv), never from a flag:
// a flag shows in ps.
package classifier

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
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
	key     string        // read from the environment by LoadKey
}

// Defaults is the classifier off, with the model, timeout and retries it uses once on.
func Defaults() Config {
	return Config{Model: "openai/gpt-4o-mini", Timeout: 20 * time.Second, Retries: 1}
}

// Flags adds the --llm-* flags to fs.
func Flags(fs *pflag.FlagSet, c *Config) {
	fs.StringVar(&c.URL, "llm-url", c.URL, "chat-completions URL of an LLM that classifies the screens the packs cannot (seed 002), e.g. https://openrouter.ai/api/v1/chat/completions; off when empty. The API key is read from $"+detector.DefaultAPIKeyEnv+" (never a flag)")
	fs.StringVar(&c.Model, "llm-model", c.Model, "model the LLM classifier asks")
	fs.DurationVar(&c.Timeout, "llm-timeout", c.Timeout, "longest one LLM classifier request may take (the packs' verdict stands meanwhile)")
	fs.IntVar(&c.Retries, "llm-retries", c.Retries, "retries of an LLM classifier request after a 5xx, 429, timeout or connection error")
}

// LoadKey reads the classifier's API key and takes it out of the process's own
// environment, so that nothing the daemon starts inherits it.
func (c *Config) LoadKey() {
	if k, ok := os.LookupEnv(detector.DefaultAPIKeyEnv); ok {
		c.key = k
		os.Unsetenv(detector.DefaultAPIKeyEnv) //nolint:errcheck // read already; never inherited
	}
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
