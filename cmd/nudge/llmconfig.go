package main

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

// llmConfig configures the optional LLM classifier of seed 002: a screen the packs cannot
// classify is sent to an OpenAI-compatible chat-completions endpoint (OpenRouter by the
// seed). Off unless URL is set. The API key comes from the environment only
// (detector.DefaultAPIKeyEnv), never from a flag: a flag shows in ps.
type llmConfig struct {
	LLMURL     string        // "" = off
	LLMModel   string        // model name sent with each request
	LLMTimeout time.Duration // one attempt
	LLMRetries int           // retries after a 5xx, 429, timeout or connection error
	llmKey     string        // read from the environment by loadLLMKey
}

func defaultLLMConfig() llmConfig {
	return llmConfig{LLMModel: "openai/gpt-4o-mini", LLMTimeout: 20 * time.Second, LLMRetries: 1}
}

func llmFlags(fs *pflag.FlagSet, c *llmConfig) {
	fs.StringVar(&c.LLMURL, "llm-url", c.LLMURL, "chat-completions URL of an LLM that classifies the screens the packs cannot (seed 002), e.g. https://openrouter.ai/api/v1/chat/completions; off when empty. The API key is read from $"+detector.DefaultAPIKeyEnv+" (never a flag)")
	fs.StringVar(&c.LLMModel, "llm-model", c.LLMModel, "model the LLM classifier asks")
	fs.DurationVar(&c.LLMTimeout, "llm-timeout", c.LLMTimeout, "longest one LLM classifier request may take (the packs' verdict stands meanwhile)")
	fs.IntVar(&c.LLMRetries, "llm-retries", c.LLMRetries, "retries of an LLM classifier request after a 5xx, 429, timeout or connection error")
}

// loadLLMKey reads the classifier's API key and takes it out of the daemon's own
// environment, so that nothing the daemon starts inherits it.
func (c *llmConfig) loadLLMKey() {
	if k, ok := os.LookupEnv(detector.DefaultAPIKeyEnv); ok {
		c.llmKey = k
		os.Unsetenv(detector.DefaultAPIKeyEnv) //nolint:errcheck // read already; never inherited
	}
}

// validate checks the classifier settings; a key is never sent in clear to another host.
func (c *llmConfig) validate() error {
	if c.LLMURL == "" {
		return nil
	}
	u, err := url.Parse(c.LLMURL)
	switch {
	case err != nil:
		return fmt.Errorf("--llm-url: %w", err)
	case u.Scheme != "https" && u.Scheme != "http", u.Host == "":
		return fmt.Errorf("--llm-url %q: want an http(s) URL", c.LLMURL)
	case u.Scheme == "http" && !isLoopback(u.Hostname()):
		return fmt.Errorf("--llm-url %q: plain http would send the screen and the API key in clear; use https (http is for loopback only)", c.LLMURL)
	case c.LLMModel == "":
		return errors.New("--llm-model is empty")
	case c.LLMTimeout <= 0:
		return errors.New("--llm-timeout must be positive")
	case c.LLMRetries < 0:
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

// classifier returns the LLM classifier, or nil when it is off.
func (c *llmConfig) classifier() (*detector.LLM, error) {
	if c.LLMURL == "" {
		return nil, nil
	}
	return detector.NewLLM(&detector.LLMConfig{Endpoint: c.LLMURL, Model: c.LLMModel, APIKey: c.llmKey,
		Timeout: c.LLMTimeout, Retries: c.LLMRetries})
}

// llmEndpoint is the URL for the log: no user info, no query (either may hold a secret).
func (c *llmConfig) llmEndpoint() string {
	u, err := url.Parse(c.LLMURL)
	if err != nil {
		return "(unparsable)"
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
}
