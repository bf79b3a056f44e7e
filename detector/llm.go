package detector

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/nudgehq/nudge"
)

// DefaultAPIKeyEnv is the environment variable read for the LLM API key.
const DefaultAPIKeyEnv = "NUDGE_LLM_API_KEY"

// Errors of Classify, for errors.Is.
var (
	// ErrLLMResponse is wrapped by every error about an answer that is not the
	// strict JSON verdict (malformed, extra fields or text, unknown state).
	ErrLLMResponse = errors.New("llm: bad response")
	// ErrLLMRefused is wrapped by the error of a request the endpoint refused with a
	// 4xx status: a bad or missing key, a rate limit (429), a request it will not take.
	ErrLLMRefused = errors.New("llm: refused")
)

// LLMOutcome is how one question to the LLM classifier ended (LLMCall, for metrics).
type LLMOutcome string

// The outcomes of a question, from Classify's error (LLMOutcomeOf).
const (
	LLMOK       LLMOutcome = "ok"       // a verdict
	LLMError    LLMOutcome = "error"    // a connection error, a 5xx
	LLMTimeout  LLMOutcome = "timeout"  // the last attempt ran out of LLMConfig.Timeout
	LLMRefused  LLMOutcome = "refused"  // a 4xx status (ErrLLMRefused)
	LLMInvalid  LLMOutcome = "invalid"  // an answer that is not a verdict (ErrLLMResponse)
	LLMCanceled LLMOutcome = "canceled" // the caller withdrew the question (its context ended)
)

// LLMOutcomes lists every outcome, in the order metrics show them.
var LLMOutcomes = []LLMOutcome{LLMOK, LLMError, LLMTimeout, LLMRefused, LLMInvalid, LLMCanceled}

// LLMOutcomeOf says how a Classify call that returned err ended.
func LLMOutcomeOf(err error) LLMOutcome {
	var te interface{ Timeout() bool }
	switch {
	case err == nil:
		return LLMOK
	case errors.Is(err, ErrLLMRefused):
		return LLMRefused
	case errors.Is(err, ErrLLMResponse):
		return LLMInvalid
	case errors.Is(err, context.Canceled):
		return LLMCanceled
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &te) && te.Timeout():
		return LLMTimeout
	}
	return LLMError
}

// LLMConfig configures the optional LLM classifier. A nil *LLMConfig means the
// classifier is off (the default); the packs decide alone.
type LLMConfig struct {
	// Endpoint is the chat-completions URL, e.g.
	// "https://openrouter.ai/api/v1/chat/completions". Required.
	Endpoint string
	// Model is the model name sent in the request. Required.
	Model string
	// APIKey is the API key itself, for a caller that read it already (and took it
	// out of its environment); "" means read APIKeyEnv.
	APIKey string
	// APIKeyEnv names the environment variable holding the API key; "" means
	// DefaultAPIKeyEnv. An unset variable (and no APIKey) sends no Authorization header.
	APIKeyEnv string
	// Timeout bounds one attempt; 0 means 20s.
	Timeout time.Duration
	// Retries is how many times a 5xx, 429, timeout or connection error is
	// retried; 0 means none.
	Retries int
	// Backoff is the wait before the first retry, doubled for each next one;
	// 0 means 500ms.
	Backoff time.Duration
	// Client is the HTTP client; nil means a new http.Client. A copy is used, whose
	// CheckRedirect, if nil, refuses a redirect to another scheme, host or port (the
	// API key goes to Endpoint only).
	Client *http.Client
}

// LLM is the optional classifier. Safe for concurrent use; nothing to close.
type LLM struct {
	cfg    LLMConfig
	key    string
	client *http.Client
}

// NewLLM returns the classifier for cfg, or nil and no error when cfg is nil
// (off). The API key is cfg.APIKey, else read from the environment once, here.
func NewLLM(cfg *LLMConfig) (*LLM, error) {
	if cfg == nil {
		return nil, nil
	}
	c := *cfg
	if c.Endpoint == "" || c.Model == "" {
		return nil, errors.New("llm config: endpoint and model are required")
	}
	if c.APIKeyEnv == "" {
		c.APIKeyEnv = DefaultAPIKeyEnv
	}
	if c.Timeout <= 0 {
		c.Timeout = 20 * time.Second
	}
	if c.Backoff <= 0 {
		c.Backoff = 500 * time.Millisecond
	}
	if c.Retries < 0 {
		return nil, fmt.Errorf("llm config: retries %d is negative", c.Retries)
	}
	client := &http.Client{}
	if c.Client != nil {
		cp := *c.Client // the caller's stays as it is
		client = &cp
	}
	if client.CheckRedirect == nil {
		client.CheckRedirect = sameOrigin
	}
	key := c.APIKey
	if key == "" {
		key = os.Getenv(c.APIKeyEnv)
	}
	c.APIKey = "" // kept in l.key only
	return &LLM{cfg: c, key: key, client: client}, nil
}

// sameOrigin refuses a redirect away from the endpoint's scheme, host and port. Go's
// client keeps the Authorization header on a redirect to the same host name whatever the
// scheme and port (and to its subdomains): https to http would send the key in clear, and
// another port is another service.
func sameOrigin(req *http.Request, via []*http.Request) error {
	first := via[0].URL
	if req.URL.Scheme != first.Scheme || req.URL.Host != first.Host {
		return fmt.Errorf("llm: redirect from %s://%s to %s://%s refused: the API key goes to the configured endpoint only",
			first.Scheme, first.Host, req.URL.Scheme, req.URL.Host)
	}
	if len(via) >= 10 {
		return errors.New("llm: stopped after 10 redirects")
	}
	return nil
}

// Classify asks the model for a verdict on screen (ANSI is stripped and
// obvious secrets are redacted first), using p's few-shot examples. The
// result has Confident true and no Draft; drafts come from the pack.
func (l *LLM) Classify(ctx context.Context, p *Pack, screen string) (Classification, error) {
	body, err := json.Marshal(l.request(p, screen))
	if err != nil {
		return Classification{}, fmt.Errorf("llm: encode request: %w", err)
	}
	backoff := l.cfg.Backoff
	for attempt := 0; ; attempt++ {
		c, retry, err := l.attempt(ctx, body)
		if err == nil || !retry || attempt >= l.cfg.Retries {
			return c, err
		}
		select {
		case <-ctx.Done():
			return Classification{}, fmt.Errorf("llm: %w (last error: %v)", ctx.Err(), err)
		case <-time.After(backoff):
		}
		backoff *= 2
	}
}

// attempt makes one request; retry says whether its error is worth retrying.
func (l *LLM) attempt(parent context.Context, body []byte) (Classification, bool, error) {
	ctx, cancel := context.WithTimeout(parent, l.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.cfg.Endpoint, bytes.NewReader(body))
	if err != nil {
		return Classification{}, false, fmt.Errorf("llm: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if l.key != "" {
		req.Header.Set("Authorization", "Bearer "+l.key)
	}
	resp, err := l.client.Do(req)
	if err != nil {
		// A timeout of this attempt or a connection error is worth another
		// try; the caller's own cancellation is not.
		return Classification{}, parent.Err() == nil, fmt.Errorf("llm: post: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return Classification{}, true, fmt.Errorf("llm: read response: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		retry := resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests
		body := nudge.Redact(string(data)) // an endpoint may echo the key it refused
		if l.key != "" {
			body = strings.ReplaceAll(body, l.key, nudge.Redacted)
		}
		if resp.StatusCode >= 400 && resp.StatusCode < 500 {
			return Classification{}, retry, fmt.Errorf("%w: status %d: %.200s", ErrLLMRefused, resp.StatusCode, body)
		}
		return Classification{}, retry, fmt.Errorf("llm: status %d: %.200s", resp.StatusCode, body)
	}
	c, err := parseLLMResponse(data)
	return c, false, err
}

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type chatRequest struct {
	Model          string            `json:"model"`
	Messages       []chatMessage     `json:"messages"`
	Temperature    float64           `json:"temperature"`
	ResponseFormat map[string]string `json:"response_format"`
}

const llmSystemPrompt = `You classify the screen of a terminal pane running an AI coding agent or a shell.
Answer with exactly one JSON object and nothing else:
{"state": "READY" | "BUSY" | "NEEDS_CONFIRMATION" | "ERROR", "summary": "<one line>", "actions_needed": ["<what a human must do>", ...]}
READY: idle, waiting for a new prompt. BUSY: working or running a command.
NEEDS_CONFIRMATION: waiting for the user to approve, choose or press a key.
ERROR: the last thing on screen is a failure (traceback, crash, API error).
Judge the bottom of the screen; old output above a fresh prompt does not count.`

func (l *LLM) request(p *Pack, screen string) chatRequest {
	msgs := []chatMessage{{Role: "system", Content: llmSystemPrompt}}
	for _, ex := range p.Examples {
		answer, _ := json.Marshal(llmVerdict{State: string(ex.State), Summary: ex.Summary, ActionsNeeded: ex.ActionsNeeded})
		msgs = append(msgs, chatMessage{Role: "user", Content: screenPrompt(p.Name, ex.Screen)},
			chatMessage{Role: "assistant", Content: string(answer)})
	}
	msgs = append(msgs, chatMessage{Role: "user", Content: screenPrompt(p.Name, nudge.Redact(nudge.StripANSI(screen)))})
	return chatRequest{Model: l.cfg.Model, Messages: msgs, ResponseFormat: map[string]string{"type": "json_object"}}
}

func screenPrompt(cli, screen string) string {
	return "CLI: " + cli + "\nScreen:\n```\n" + strings.TrimRight(screen, "\n") + "\n```"
}

type llmVerdict struct {
	State         string   `json:"state"`
	Summary       string   `json:"summary"`
	ActionsNeeded []string `json:"actions_needed"`
}

// parseLLMResponse takes a chat-completions response body and returns the
// verdict in its first choice, which must be one strict JSON object.
func parseLLMResponse(data []byte) (Classification, error) {
	var resp struct {
		Choices []struct {
			Message chatMessage `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(data, &resp); err != nil {
		return Classification{}, fmt.Errorf("%w: not a chat completion: %v", ErrLLMResponse, err)
	}
	if len(resp.Choices) == 0 {
		return Classification{}, fmt.Errorf("%w: no choices", ErrLLMResponse)
	}
	content := strings.TrimSpace(resp.Choices[0].Message.Content)
	dec := json.NewDecoder(strings.NewReader(content))
	dec.DisallowUnknownFields()
	var v llmVerdict
	if err := dec.Decode(&v); err != nil {
		return Classification{}, fmt.Errorf("%w: %v in %.200q", ErrLLMResponse, err, content)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Classification{}, fmt.Errorf("%w: text after the JSON object in %.200q", ErrLLMResponse, content)
	}
	st := nudge.Readiness(v.State)
	if !validState(st) {
		return Classification{}, fmt.Errorf("%w: unknown state %q", ErrLLMResponse, v.State)
	}
	return Classification{State: st, Summary: summarize(v.Summary), ActionsNeeded: v.ActionsNeeded, Confident: true}, nil
}
