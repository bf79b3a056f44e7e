package detector

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
)

// chatServer serves chat completions: reply(n, req) gives the status and the
// message content (or raw body when status != 200) for the n-th call (0-based).
func chatServer(t *testing.T, reply func(n int, req chatRequest) (int, string)) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(calls.Add(1)) - 1
		var req chatRequest
		data, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(data, &req); err != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		if got := r.Header.Get("Authorization"); got != "Bearer test-key-123" {
			http.Error(w, "unauthorized: "+got, http.StatusUnauthorized)
			return
		}
		status, content := reply(n, req)
		if status != http.StatusOK {
			http.Error(w, content, status)
			return
		}
		resp := map[string]any{"choices": []any{map[string]any{"message": map[string]string{"role": "assistant", "content": content}}}}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(resp)
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

func newTestLLM(t *testing.T, url string, timeout time.Duration, retries int) *LLM {
	t.Helper()
	t.Setenv("NUDGE_TEST_LLM_KEY", "test-key-123")
	l, err := NewLLM(&LLMConfig{Endpoint: url, Model: "m", APIKeyEnv: "NUDGE_TEST_LLM_KEY",
		Timeout: timeout, Retries: retries, Backoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestLLMOffByDefault(t *testing.T) {
	l, err := NewLLM(nil)
	if l != nil || err != nil {
		t.Fatalf("NewLLM(nil) = %v, %v; want nil, nil", l, err)
	}
	if _, err := NewLLM(&LLMConfig{Model: "m"}); err == nil {
		t.Fatal("missing endpoint accepted")
	}
}

func TestLLMClassify(t *testing.T) {
	pack := defaultPacks(t)["shell"]
	screen := "\x1b[1m$ export OPENAI_API_KEY=sk-abcdefghijklmnopqrstuvwx\n$ ./deploy\nAllow? (y/N)"
	t.Run("OK", func(t *testing.T) {
		var sent chatRequest
		srv, _ := chatServer(t, func(_ int, req chatRequest) (int, string) {
			sent = req
			return 200, ` {"state":"NEEDS_CONFIRMATION","summary":"deploy asks to continue","actions_needed":["answer y or n"]} `
		})
		c, err := newTestLLM(t, srv.URL, 5*time.Second, 0).Classify(context.Background(), pack, screen)
		if err != nil {
			t.Fatal(err)
		}
		if c.State != nudge.NeedsConfirmation || c.Summary != "deploy asks to continue" || len(c.ActionsNeeded) != 1 || !c.Confident {
			t.Errorf("got %+v", c)
		}
		last := sent.Messages[len(sent.Messages)-1].Content
		if strings.Contains(last, "sk-abcdef") || strings.Contains(last, "\x1b") || !strings.Contains(last, "Allow? (y/N)") {
			t.Errorf("screen sent unredacted or with ANSI: %q", last)
		}
		// system prompt + two messages per few-shot example + the screen
		if want := 1 + 2*len(pack.Examples) + 1; len(sent.Messages) != want {
			t.Errorf("sent %d messages, want %d", len(sent.Messages), want)
		}
	})
	bad := []struct{ name, content string }{
		{"ErrMalformedJSON", `{"state":"READY","summary":`},
		{"ErrWrongState", `{"state":"IDLE","summary":"x","actions_needed":[]}`},
		{"ErrExtraJunk", `{"state":"READY","summary":"x","actions_needed":[]} I hope this helps`},
		{"ErrExtraField", `{"state":"READY","summary":"x","actions_needed":[],"confidence":0.9}`},
		{"ErrFenced", "```json\n{\"state\":\"READY\",\"summary\":\"x\"}\n```"},
	}
	for _, b := range bad {
		t.Run(b.name, func(t *testing.T) {
			srv, calls := chatServer(t, func(int, chatRequest) (int, string) { return 200, b.content })
			_, err := newTestLLM(t, srv.URL, 5*time.Second, 3).Classify(context.Background(), pack, screen)
			if !errors.Is(err, ErrLLMResponse) {
				t.Fatalf("err = %v, want ErrLLMResponse", err)
			}
			if n := calls.Load(); n != 1 {
				t.Errorf("bad answer retried: %d calls", n)
			}
		})
	}
	t.Run("OK500ThenSuccess", func(t *testing.T) {
		srv, calls := chatServer(t, func(n int, _ chatRequest) (int, string) {
			if n < 2 {
				return 503, "overloaded"
			}
			return 200, `{"state":"BUSY","summary":"working","actions_needed":[]}`
		})
		c, err := newTestLLM(t, srv.URL, 5*time.Second, 2).Classify(context.Background(), pack, screen)
		if err != nil || c.State != nudge.Busy {
			t.Fatalf("got %+v, %v", c, err)
		}
		if n := calls.Load(); n != 3 {
			t.Errorf("calls = %d, want 3", n)
		}
	})
	t.Run("Err500RetriesExhausted", func(t *testing.T) {
		srv, calls := chatServer(t, func(int, chatRequest) (int, string) { return 500, "boom" })
		if _, err := newTestLLM(t, srv.URL, 5*time.Second, 1).Classify(context.Background(), pack, screen); err == nil {
			t.Fatal("no error")
		}
		if n := calls.Load(); n != 2 {
			t.Errorf("calls = %d, want 2", n)
		}
	})
	t.Run("Err400NotRetried", func(t *testing.T) {
		srv, calls := chatServer(t, func(int, chatRequest) (int, string) { return 400, "bad model" })
		if _, err := newTestLLM(t, srv.URL, 5*time.Second, 3).Classify(context.Background(), pack, screen); err == nil {
			t.Fatal("no error")
		}
		if n := calls.Load(); n != 1 {
			t.Errorf("calls = %d, want 1", n)
		}
	})
	t.Run("ErrTimeoutThenSuccess", func(t *testing.T) {
		release := make(chan struct{})
		srv, calls := chatServer(t, func(n int, _ chatRequest) (int, string) {
			if n == 0 {
				<-release // hang past the client's timeout
			}
			return 200, `{"state":"READY","summary":"idle","actions_needed":[]}`
		})
		t.Cleanup(func() { close(release) }) // runs before srv.Close
		c, err := newTestLLM(t, srv.URL, 200*time.Millisecond, 1).Classify(context.Background(), pack, screen)
		if err != nil || c.State != nudge.Ready {
			t.Fatalf("got %+v, %v", c, err)
		}
		if n := calls.Load(); n != 2 {
			t.Errorf("calls = %d, want 2", n)
		}
	})
	t.Run("ErrTimeout", func(t *testing.T) {
		release := make(chan struct{})
		srv, _ := chatServer(t, func(int, chatRequest) (int, string) {
			<-release
			return 200, `{"state":"READY","summary":"idle"}`
		})
		t.Cleanup(func() { close(release) }) // runs before srv.Close
		_, err := newTestLLM(t, srv.URL, 100*time.Millisecond, 1).Classify(context.Background(), pack, screen)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want a deadline error", err)
		}
	})
}

// LLMOutcomeOf names how each kind of question ended, for the metrics: a verdict, a 500,
// an answer that is no verdict, an attempt out of time, a 4xx (a bad key, a rate
// limit) and a question its caller withdrew.
func TestLLMOutcomeOf(t *testing.T) {
	pack := defaultPacks(t)["shell"]
	release := make(chan struct{})
	srv, _ := chatServer(t, func(_ int, req chatRequest) (int, string) {
		screen := req.Messages[len(req.Messages)-1].Content
		switch {
		case strings.Contains(screen, "ok"):
			return 200, `{"state":"READY","summary":"idle","actions_needed":[]}`
		case strings.Contains(screen, "junk"):
			return 200, `not json`
		case strings.Contains(screen, "boom"):
			return 500, "boom"
		case strings.Contains(screen, "slow"):
			return 429, "slow down"
		case strings.Contains(screen, "unknown"):
			return 404, "no such model"
		}
		<-release // hang
		return 200, `{"state":"READY","summary":"idle","actions_needed":[]}`
	})
	t.Cleanup(func() { close(release) }) // runs before srv.Close
	l := newTestLLM(t, srv.URL, 200*time.Millisecond, 0)
	canceled, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	for _, tt := range []struct {
		ctx    context.Context
		screen string
		want   LLMOutcome
	}{
		{context.Background(), "ok", LLMOK},
		{context.Background(), "junk", LLMInvalid},
		{context.Background(), "boom", LLMError},
		{context.Background(), "slow", LLMRefused},
		{context.Background(), "unknown", LLMRefused},
		{context.Background(), "hang", LLMTimeout},
		{canceled, "hang", LLMCanceled},
	} {
		_, err := l.Classify(tt.ctx, pack, tt.screen)
		if got := LLMOutcomeOf(err); got != tt.want {
			t.Errorf("%s: got %s (%v), want %s", tt.screen, got, err, tt.want)
		}
	}
	if _, err := newTestLLM(t, srv.URL, time.Second, 0).Classify(context.Background(), pack, "slow"); !errors.Is(err, ErrLLMRefused) {
		t.Errorf("429: %v, want ErrLLMRefused", err)
	}
}

// The API key goes to the configured endpoint only. A redirect to another port of the same
// host, where Go's client keeps the Authorization header (as it does from https to http),
// is refused and the key never arrives there; a refusal that echoes the key does not put
// it in the error, which is logged. Before, both leaked it.
func TestLLMKeyStaysWithTheEndpoint(t *testing.T) {
	pack := defaultPacks(t)["shell"]
	const key = "plain-key-0123456789"
	var leaked atomic.Value
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		leaked.Store(r.Header.Get("Authorization"))
		w.Write([]byte(`{"choices":[{"message":{"role":"assistant","content":"{\"state\":\"READY\",\"summary\":\"x\",\"actions_needed\":[]}"}}]}`))
	}))
	defer other.Close()
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/v1/chat/completions", http.StatusTemporaryRedirect)
	}))
	defer redirect.Close()
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "Incorrect API key provided: "+strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "), http.StatusUnauthorized)
	}))
	defer echo.Close()
	llm := func(url string) *LLM {
		l, err := NewLLM(&LLMConfig{Endpoint: url, Model: "m", APIKey: key, Timeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	if _, err := llm(redirect.URL).Classify(context.Background(), pack, "screen"); err == nil || leaked.Load() != nil {
		t.Errorf("redirected to another port: err %v, the other server got %v", err, leaked.Load())
	}
	_, err := llm(echo.URL).Classify(context.Background(), pack, "screen")
	if !errors.Is(err, ErrLLMRefused) || strings.Contains(err.Error(), key) {
		t.Errorf("a refusal echoing the key: %v", err)
	}
}
