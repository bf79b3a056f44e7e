package hub

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestConfigComplete(t *testing.T) {
	for i, tc := range []struct {
		edit func(*Config)
		want string // "" ok, else in the error
	}{
		{func(c *Config) { c.Listen = "127.0.0.1:0" }, ""},
		{func(c *Config) { c.Listen, c.URL = "127.0.0.1:0", "nats://x:1" }, "exclusive"},
		{func(c *Config) { c.URL = "nats://x:1" }, "--hub-credentials"},
		{func(c *Config) { c.Listen, c.TLSCert = "127.0.0.1:0", "c.pem" }, "go together"},
		{func(c *Config) { c.Listen, c.HostName = "127.0.0.1:0", "a.b" }, "--host-name"},
		{func(c *Config) { c.Listen, c.MaxQueue = "127.0.0.1:0", 0 }, "positive"},
		{func(c *Config) { c.WebSocket = "127.0.0.1:0" }, "--hub-listen"},
		{func(c *Config) { c.Listen, c.WebSocket = "127.0.0.1:0", "127.0.0.1:0" }, ""},
		{func(c *Config) { c.URL, c.Credentials = "http://x:1", "c" }, "nats://"},
		{func(c *Config) { c.URL, c.Credentials = "wss://hub.example/nats", "c" }, ""},
		{func(c *Config) { c.URL, c.Credentials = "hub.example:4222,tls://b:4222", "c" }, ""},
	} {
		c := DefaultConfig()
		c.HostName = "h"
		tc.edit(&c)
		err := c.complete()
		if got := ""; err != nil {
			got = err.Error()
			if tc.want == "" || !strings.Contains(got, tc.want) {
				t.Errorf("#%d: got %q, want %q", i, got, tc.want)
			}
		} else if tc.want != "" {
			t.Errorf("#%d: got ok, want %q", i, tc.want)
		}
	}
}

func TestReadIdentities(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, dir, "users", "# members\na pw\n\nb UABC wa,wb\nc pw *\n")
	ids, err := readIdentities(p)
	if err != nil || len(ids) != 3 || ids[1].Name != "b" || strings.Join(ids[1].Workspaces, ",") != "wa,wb" || ids[2].Workspaces != nil {
		t.Fatalf("got %+v, %v", ids, err)
	}
	open := filepath.Join(dir, "open")
	if err := os.WriteFile(open, []byte("a pw\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readIdentities(open); err == nil || !strings.Contains(err.Error(), "0600") {
		t.Fatalf("a file others can read: %v", err)
	}
	if _, err := readIdentities(writeFile(t, dir, "bad", "a.b pw\n")); err == nil {
		t.Fatal("a bad name was read")
	}
}
