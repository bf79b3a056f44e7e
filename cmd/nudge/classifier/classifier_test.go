package classifier

import (
	"strings"
	"testing"
)

// --llm-url is off by default; a plain-http URL to another host is refused (it would carry
// the key in clear).
func TestValidate(t *testing.T) {
	if c := Defaults(); c.URL != "" {
		t.Fatalf("LLM on by default: %q", c.URL)
	}
	for _, tt := range []struct {
		url  string
		want string
	}{
		{"https://openrouter.ai/api/v1/chat/completions", ""},
		{"http://127.0.0.1:8080/v1/chat/completions", ""},
		{"http://localhost:8080/v1", ""},
		{"http://[::1]:8080/v1", ""},
		{"http://example.com/v1", "in clear"},
		{"ftp://127.0.0.1/x", "http(s)"},
	} {
		c := Defaults()
		c.URL = tt.url
		err := c.Validate()
		if (tt.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: got %v, want %q", tt.url, err, tt.want)
		}
	}
}

// The log's endpoint carries neither user info nor a query.
func TestEndpoint(t *testing.T) {
	c := Config{URL: "https://user:secret@example.com/v1/chat?key=secret"}
	if got := c.Endpoint(); got != "https://example.com/v1/chat" {
		t.Errorf("Endpoint: %q", got)
	}
}
