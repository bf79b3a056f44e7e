package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nudgehq/nudge/cmd/nudge/daemon"
	"github.com/nudgehq/nudge/cmd/nudge/web"
)

// webSetup starts a daemon with the web view on a free loopback port and the dialog
// stand-in profile of dialogSetup.
func webSetup(t *testing.T, opts ...func(*daemon.Config)) *testDaemon {
	t.Helper()
	cfg := newTestConfig(t)
	cfg.Web.Addr = "127.0.0.1:0"
	for _, o := range opts {
		o(&cfg)
	}
	prof := map[string]any{
		"name": "stand", "launch": []string{"sh"}, "allowed_launchers": []string{"sh"},
		"prompt_arg": "append", "resume": []string{}, "pack": "claude", "submit_settle": "20ms",
		"queues_input": true, "ack_signals": []string{"marker", "api"}, "ready_quiet": "200ms",
	}
	cfg.ProfileDir = t.TempDir()
	b, _ := json.Marshal(prof)
	if err := os.WriteFile(filepath.Join(cfg.ProfileDir, "stand.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return startDaemon(t, cfg)
}

// webBrowser is a Go HTTP client that behaves as the app's page does: a cookie jar, and
// the server's own Origin on every request.
type webBrowser struct {
	t      *testing.T
	base   string
	origin string
	c      *http.Client
}

// pairBrowser pairs a new client with scope through `nudge web pair`.
func (td *testDaemon) pairBrowser(scope string) *webBrowser {
	td.t.Helper()
	out, errOut, code := td.runCLI("web", "pair", "--scope", scope, "--name", "test-"+scope, "--no-qr")
	if code != 0 {
		td.t.Fatalf("nudge web pair: %d %s", code, errOut)
	}
	link, err := url.Parse(strings.TrimSpace(out))
	if err != nil || link.Fragment == "" {
		td.t.Fatalf("pair link %q: %v", out, err)
	}
	jar, _ := cookiejar.New(nil)
	b := &webBrowser{t: td.t, base: link.Scheme + "://" + link.Host, c: &http.Client{Jar: jar}}
	b.origin = b.base
	if code, body := b.do("POST", "/pair", `{"code":"`+link.Fragment+`"}`); code != 200 {
		td.t.Fatalf("pair: %d %s", code, body)
	}
	return b
}

func (b *webBrowser) do(method, path, body string) (int, string) {
	b.t.Helper()
	req, err := http.NewRequest(method, b.base+path, strings.NewReader(body))
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if b.origin != "" {
		req.Header.Set("Origin", b.origin)
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(got)
}

// TestWebReadOnlyChangesNothing: a browser paired read-only calls every route the web
// view reaches, each state-changing one with a body that would work for an operator: all
// are refused with FORBIDDEN, and nothing changed (no trigger, not paused, no key reached
// the dialog). An "answer" device may answer but not trigger or pause; a "trigger" one
// may not pause. Every GET works for all of them.
func TestWebReadOnlyChangesNothing(t *testing.T) {
	td := webSetup(t)
	sh := td.spawnShell("w1", "sh", "sh")
	dlg, keys := td.spawnStandin("dlg", claudeBash+`show "touch web.txt"`+"\n"+standinKeys, "", "NEEDS_CONFIRMATION")
	if dlg.Dialog == nil {
		t.Fatalf("the stand-in's dialog was not read: %+v", dlg.Runtime)
	}
	bodies := map[string]string{
		"/answer":      `{"dialog_id":"` + dlg.Dialog.DialogID + `","choice":"approve","reason":"from a read-only phone"}`,
		"/pause":       `{"reason":"read-only"}`,
		"/resume":      `{}`,
		"/v1/triggers": `{"trigger_id":"ro-1","workspace":"w1","agent":"sh","prompt":"echo RO"}`,
	}
	allowed := map[string][]string{ // scope → the state-changing routes it may use
		"read":    nil,
		"answer":  {"/answer"},
		"trigger": {"/answer", "/v1/triggers"},
	}
	for _, scope := range []string{"read", "answer", "trigger", "operate"} {
		b := td.pairBrowser(scope)
		// Typing into a pane is the type scope's alone.
		if code, body := b.do("POST", "/api/v1/runtimes/"+dlg.RuntimeID+"/keys", `{"keys":[{"text":"1"},{"key":"Enter"}]}`); code != http.StatusForbidden {
			t.Errorf("%s: keys: %d %s; want 403", scope, code, body)
		}
		if scope == "operate" {
			continue
		}
		for _, route := range web.APIRoutes {
			method, path, _ := strings.Cut(route, " ")
			id := sh.RuntimeID
			if strings.HasSuffix(path, "/answer") {
				id = dlg.RuntimeID
			}
			path = strings.NewReplacer("{id}", id).Replace(path)
			if strings.HasPrefix(path, "/v1/triggers/") {
				path = "/v1/triggers/none"
			}
			if method == "GET" {
				if strings.HasSuffix(path, "/events") {
					path += "?since=0&follow=0"
				}
				if code, body := b.do(method, "/api"+path, ""); code != 200 && !(code == 404 && strings.HasSuffix(path, "/none")) {
					t.Errorf("%s: GET %s: %d %s", scope, path, code, body)
				}
				continue
			}
			key := path
			if i := strings.LastIndex(path, "/"); strings.HasPrefix(path, "/v1/runtimes/") {
				key = path[i:]
			}
			may := false
			for _, a := range allowed[scope] {
				may = may || a == key
			}
			if may {
				continue // tried by the browser test
			}
			if code, body := b.do(method, "/api"+path, bodies[key]); code != http.StatusForbidden || !strings.Contains(body, "FORBIDDEN") {
				t.Errorf("%s: %s %s: %d %s; want 403 FORBIDDEN", scope, method, path, code, body)
			}
		}
	}
	if rt := td.waitRuntime(sh.RuntimeID, func(runtimeView) bool { return true }); rt.Paused {
		t.Error("a device without admin paused the runtime")
	}
	if err := td.c.do(t0(), "GET", "/v1/triggers/ro-1", nil, nil); err == nil {
		t.Error("a device without trigger sent a trigger")
	}
	if got := td.keysAfterSentinel(dlg.PaneID, keys); got != "" {
		t.Errorf("a device without answer typed into the dialog: %q", got)
	}
}

// TestWebKeysReachThePane: a device paired with the type scope types into a stand-in's
// pane through the daemon's control connection (text, Esc, Tab, Ctrl-C, an arrow,
// Enter), audited with its name and never with the text; the window keeps its size.
func TestWebKeysReachThePane(t *testing.T) {
	t.Parallel()
	td := webSetup(t)
	kb, keys := td.spawnStandin("kb", composerBox+rawKeys, "", "READY")
	size := func() string {
		return td.tmux("display-message", "-p", "-t", kb.PaneID, "#{window_width}x#{window_height}")
	}
	before := size()
	b := td.pairBrowser("type")
	for _, body := range []string{`{"keys":[{"text":"hi"}]}`, `{"keys":[{"key":"Escape"},{"key":"Tab"},{"key":"C-c"},{"key":"Up"},{"key":"Enter"}]}`} {
		if code, got := b.do("POST", "/api/v1/runtimes/"+kb.RuntimeID+"/keys", body); code != 200 {
			t.Fatalf("keys %s: %d %s", body, code, got)
		}
	}
	if got, want := td.keysAfterSentinel(kb.PaneID, keys), "hi\x1b\t\x03\x1b[A\r"; got != want {
		t.Errorf("the pane got %q, want %q", got, want)
	}
	var reasons []string
	for _, r := range td.runtimeRecords(kb.RuntimeID) {
		if r.Event == "terminal_keys" && strings.HasPrefix(r.Subject, "web:test-type#") {
			reasons = append(reasons, r.Reason)
		}
	}
	if want := []string{"typed in the web view's terminal: 2 characters", "typed in the web view's terminal: Escape, Tab, C-c, Up, Enter"}; !slices.Equal(reasons, want) {
		t.Errorf("audit: %q, want %q", reasons, want)
	}
	if got := size(); got != before {
		t.Errorf("the window's size changed: %s, was %s", got, before)
	}
}

// TestWebRevokedAndCrossSite: a device token revoked with `nudge token revoke` is
// refused on its next request; a request from another site's page, or without an
// Origin, is refused before it reaches the API (the runtime stays unpaused) even with a
// cookie that may pause.
func TestWebRevokedAndCrossSite(t *testing.T) {
	td := webSetup(t)
	sh := td.spawnShell("w1", "sh", "sh")
	b := td.pairBrowser("operate")
	for _, origin := range []string{"http://evil.example", "null", ""} {
		b.origin = origin
		if code, body := b.do("POST", "/api/v1/runtimes/"+sh.RuntimeID+"/pause", `{}`); code != http.StatusForbidden {
			t.Errorf("pause from origin %q: %d %s", origin, code, body)
		}
	}
	if rt := td.waitRuntime(sh.RuntimeID, func(runtimeView) bool { return true }); rt.Paused {
		t.Fatal("a cross-site request paused the runtime")
	}
	b.origin = b.base
	if _, errOut, code := td.runCLI("token", "revoke", deviceTokenID(t, td, "web:test-operate")); code != 0 {
		t.Fatalf("revoke: %s", errOut)
	}
	if code, body := b.do("GET", "/api/v1/runtimes", ""); code != http.StatusUnauthorized || !strings.Contains(body, "revoked") {
		t.Errorf("after revoke: %d %s", code, body)
	}
	if code, _ := b.do("POST", "/api/v1/runtimes/"+sh.RuntimeID+"/pause", `{}`); code != http.StatusUnauthorized {
		t.Errorf("pause after revoke: %d", code)
	}
}

// TestWebCloseJoinsItsGoroutines: a daemon closed while a browser holds an event stream
// and a terminal view open ends both (the streams, their token checks, the terminal's
// control client) before Close returns.
func TestWebCloseJoinsItsGoroutines(t *testing.T) {
	before := goroutines()
	td := webSetup(t)
	sh := td.spawnShell("w1", "sh", "sh")
	b := td.pairBrowser("read")
	opened := make(chan string, 2)
	for _, p := range []string{"/api/v1/events", "/api/v1/runtimes/" + sh.RuntimeID + "/terminal"} {
		req, _ := http.NewRequest("GET", b.base+p, nil)
		req.Header.Set("Accept", "text/event-stream")
		resp, err := b.c.Do(req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s: %v %v", p, resp, err)
		}
		go func() {
			defer resp.Body.Close()
			opened <- p
			io.Copy(io.Discard, resp.Body)
		}()
	}
	<-opened
	<-opened
	td.stop()
	web := regexp.MustCompile(`github\.com/nudgehq/nudge/(controlmode|cmd/nudge/(web|server|events))\.`)
	var left []string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		left = left[:0]
		for id, g := range goroutines() {
			if _, old := before[id]; !old && web.MatchString(g) {
				left = append(left, g)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(left) > 0 {
		t.Fatalf("%d goroutines outlived Close:\n%s", len(left), strings.Join(left, "\n\n"))
	}
}
