package classifier

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nudgehq/nudge/detector"
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

// TestLoadKeyFromDotEnv: with the classifier on and no key in the environment, the key is
// read from a .env file (seed 002), kept out of the environment, and a file that is not
// the owner's alone, not regular, or too large is refused without quoting it.
func TestLoadKeyFromDotEnv(t *testing.T) {
	const key = "sk-or-test-0123456789"
	t.Setenv(detector.DefaultAPIKeyEnv, "")
	os.Unsetenv(detector.DefaultAPIKeyEnv)
	write := func(t *testing.T, body string, mode os.FileMode) string {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, ".env"), []byte(body), mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(filepath.Join(dir, ".env"), mode)
		return dir
	}
	on := func() Config { c := Defaults(); c.URL = "https://openrouter.ai/api/v1/chat/completions"; return c }
	for i, tt := range []struct {
		body string
		want string
	}{
		{"OPENROUTER_API_KEY=" + key + "\n", key},
		{"# comment\nexport OPENROUTER_API_KEY=\"" + key + "\"\r\n", key},
		{"OPENROUTER_API_KEY='" + key + "'", key},
		{"OPENROUTER_API_KEY=" + key + " # mine\n", key},
		{"OPENROUTER_API_KEY=other\nNUDGE_LLM_API_KEY=" + key + "\n", key}, // nudge's own name first
		{"OTHER=x\n", ""},
	} {
		c := on()
		if err := c.LoadKey(write(t, tt.body, 0o600)); err != nil || c.key != tt.want {
			t.Errorf("#%d: key %q, err %v; want %q", i, c.key, err, tt.want)
		}
		if _, ok := os.LookupEnv("OPENROUTER_API_KEY"); ok {
			t.Fatalf("#%d: the key went into the environment", i)
		}
	}
	t.Run("ErrOthersRead", func(t *testing.T) {
		c := on()
		err := c.LoadKey(write(t, "OPENROUTER_API_KEY="+key, 0o644))
		if err == nil || c.KeySet() || strings.Contains(err.Error(), key) {
			t.Fatalf("a world-readable .env: err %v, key set %v", err, c.KeySet())
		}
	})
	t.Run("ErrSymlink", func(t *testing.T) {
		src := write(t, "OPENROUTER_API_KEY="+key, 0o600)
		dir := t.TempDir()
		if err := os.Symlink(filepath.Join(src, ".env"), filepath.Join(dir, ".env")); err != nil {
			t.Fatal(err)
		}
		c := on()
		if err := c.LoadKey(dir); err == nil || c.KeySet() {
			t.Fatalf("a symlinked .env: err %v, key set %v", err, c.KeySet())
		}
	})
	t.Run("ErrTooLarge", func(t *testing.T) {
		c := on()
		if err := c.LoadKey(write(t, strings.Repeat("#", maxEnvFile)+"\nOPENROUTER_API_KEY="+key, 0o600)); err == nil || c.KeySet() {
			t.Fatalf("an oversized .env: err %v, key set %v", err, c.KeySet())
		}
	})
	t.Run("Missing", func(t *testing.T) {
		c := on()
		if err := c.LoadKey(t.TempDir()); err != nil || c.KeySet() {
			t.Fatalf("no .env: err %v, key set %v", err, c.KeySet())
		}
	})
	t.Run("Off", func(t *testing.T) {
		c := Defaults() // classifier off: the file is not read at all
		if err := c.LoadKey(write(t, "OPENROUTER_API_KEY="+key, 0o644)); err != nil || c.KeySet() {
			t.Fatalf("classifier off: err %v, key set %v", err, c.KeySet())
		}
	})
	t.Run("EnvFirst", func(t *testing.T) {
		t.Setenv(detector.DefaultAPIKeyEnv, "from-env")
		c := on()
		if err := c.LoadKey(write(t, "OPENROUTER_API_KEY="+key, 0o600)); err != nil || c.key != "from-env" {
			t.Fatalf("environment first: key %q, err %v", c.key, err)
		}
		if _, ok := os.LookupEnv(detector.DefaultAPIKeyEnv); ok {
			t.Fatal("the key stayed in the environment")
		}
	})
}
