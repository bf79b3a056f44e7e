package web

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/api"
	"github.com/nudgehq/nudge/cmd/nudge/auth"
	"github.com/nudgehq/nudge/store"
)

// memStore is the authority's store in memory.
type memStore struct {
	mu   sync.Mutex
	meta map[string][]byte
}

func (m *memStore) GetMeta(k string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.meta[k]
	if !ok {
		return nil, store.ErrNotFound
	}
	return v, nil
}

func (m *memStore) PutMeta(k string, v []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.meta[k] = v
	return nil
}

func (m *memStore) DeleteMeta(k string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.meta, k)
	return nil
}

func (m *memStore) AuditHead() (uint64, string, error) { return 0, "", nil }

type fakeRuntimes map[string]nudge.Runtime

func (f fakeRuntimes) Get(id string) (nudge.Runtime, bool) { rt, ok := f[id]; return rt, ok }

// rig is a web server on httptest with a real token authority and an API that records
// the requests that reach it (and answers events as a stream until the request ends).
type rig struct {
	t       *testing.T
	a       *auth.Authority
	s       *Server
	ts      *httptest.Server
	mu      sync.Mutex
	reached []string
	admin   auth.Caller
	// answer, when set, answers an API request first (false: the default answer).
	answer func(w http.ResponseWriter, req *http.Request, c auth.Caller) bool
}

func newRig(t *testing.T, cfg Config) *rig {
	t.Helper()
	a, err := auth.Open(auth.Config{StateDir: t.TempDir()}, &memStore{meta: map[string][]byte{}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, a: a, admin: auth.Caller{Subject: "uid:0", UID: 0}}
	apiH := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		c, err := TokenAuthenticator{a}.Authenticate(auth.Peer{}, req.Header.Get("Authorization"))
		if err != nil {
			fail(w, err)
			return
		}
		r.mu.Lock()
		r.reached = append(r.reached, req.Method+" "+req.URL.Path+" as "+c.Subject)
		r.mu.Unlock()
		if r.answer != nil && r.answer(w, req, c) {
			return
		}
		if strings.HasSuffix(req.URL.Path, "/events") {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(200)
			io.WriteString(w, "data: {}\n\n")
			w.(http.Flusher).Flush()
			<-req.Context().Done()
			return
		}
		if req.Method == "GET" && (req.URL.Path == "/v1/runtimes" || req.URL.Path == "/v1/triggers") {
			writeJSON(w, 200, []any{}) // the lists the fleet's cards are read from
			return
		}
		writeJSON(w, 200, map[string]string{"ok": "yes"})
	})
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	s, err := New(cfg, Deps{API: apiH, Tokens: a, Runtimes: fakeRuntimes{}})
	if err != nil {
		t.Fatal(err)
	}
	r.s = s
	r.ts = httptest.NewServer(s.Handler())
	s.cfg.PublicURL = r.ts.URL
	t.Cleanup(func() { r.ts.Close(); s.Close() })
	return r
}

func (r *rig) reachedAPI() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.reached...)
}

// client is a browser: a cookie jar; origin is sent on every request ("" none).
type client struct {
	r      *rig
	c      *http.Client
	origin string
}

func (r *rig) client() *client {
	jar, _ := cookiejar.New(nil)
	return &client{r: r, c: &http.Client{Jar: jar}, origin: r.ts.URL}
}

func (c *client) do(method, path, body string, hdr ...string) (*http.Response, string) {
	c.r.t.Helper()
	req, _ := http.NewRequest(method, c.r.ts.URL+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if c.origin != "" {
		req.Header.Set("Origin", c.origin)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.c.Do(req)
	if err != nil {
		c.r.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// pair makes a link for scope and redeems it with c; it returns the link's code.
func (c *client) pair(scope string) string {
	c.r.t.Helper()
	p, err := c.r.s.Pair(c.r.admin, api.WebPairRequest{Scope: scope, Name: "t"})
	if err != nil {
		c.r.t.Fatal(err)
	}
	u, _ := url.Parse(p.URL)
	if resp, body := c.do("POST", "/pair", `{"code":"`+u.Fragment+`"}`); resp.StatusCode != 200 {
		c.r.t.Fatalf("pair: %d %s", resp.StatusCode, body)
	}
	return u.Fragment
}

func TestValidate(t *testing.T) {
	for i, tt := range []struct {
		cfg Config
		err error
	}{
		{Config{Addr: "127.0.0.1:8088"}, nil},
		{Config{Addr: "localhost:8088"}, nil},
		{Config{Addr: "[::1]:8088"}, nil},
		{Config{Addr: "0.0.0.0:8088"}, ErrNotLoopback},
		{Config{Addr: ":8088"}, ErrNotLoopback},
		{Config{Addr: "192.168.1.5:8088"}, ErrNotLoopback},
		{Config{Addr: "192.168.1.5:8088", Insecure: true}, nil},
		{Config{Addr: "192.168.1.5:8088", TLSCert: "c.pem", TLSKey: "k.pem"}, nil},
	} {
		if err := tt.cfg.Validate(); !errors.Is(err, tt.err) {
			t.Errorf("#%d: %+v: got %v, want %v", i, tt.cfg, err, tt.err)
		}
	}
	if err := (Config{Addr: "127.0.0.1:1", Origins: []string{"https://x.ts.net/path"}}).Validate(); err == nil {
		t.Error("an origin with a path was taken")
	}
}

// TestPairOnce: a link works once and not after it expired; the cookie is HttpOnly and
// SameSite=Strict (Secure when the page is https), and holds a device token listed with
// the token index. The link's code is nowhere in the answer.
func TestPairOnce(t *testing.T) {
	now := time.Now()
	var mu sync.Mutex
	r := newRig(t, Config{Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return now }})
	c := r.client()
	p, err := r.s.Pair(r.admin, api.WebPairRequest{Scope: "answer", Name: "phone"})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(p.URL)
	if u.Path != "/pair" || u.RawQuery != "" || len(u.Fragment) != 43 {
		t.Fatalf("link %q: want the code in the fragment only", p.URL)
	}
	resp, body := c.do("POST", "/pair", `{"code":"`+u.Fragment+`"}`, "Origin", "https://phone.example")
	if resp.StatusCode != 403 {
		t.Fatalf("pair from another origin: %d %s", resp.StatusCode, body)
	}
	resp, body = c.do("POST", "/pair", `{"code":"`+u.Fragment+`"}`)
	if resp.StatusCode != 200 || strings.Contains(body, u.Fragment) {
		t.Fatalf("pair: %d %s", resp.StatusCode, body)
	}
	ck := resp.Header.Get("Set-Cookie")
	for _, want := range []string{CookieName + "=nudge1.", "HttpOnly", "SameSite=Strict", "Path=/"} {
		if !strings.Contains(ck, want) {
			t.Errorf("cookie %q lacks %q", ck, want)
		}
	}
	if strings.Contains(ck, "Secure") {
		t.Errorf("cookie %q: Secure on plain http", ck)
	}
	list, _ := r.a.List(r.admin)
	if len(list) != 1 || list[0].Subject != "web:phone" || strings.Join(list[0].Verbs, ",") != "read,answer" {
		t.Errorf("token index: %+v", list)
	}
	if resp, _ := c.do("POST", "/pair", `{"code":"`+u.Fragment+`"}`); resp.StatusCode != 401 {
		t.Errorf("second use: %d", resp.StatusCode)
	}
	p2, _ := r.s.Pair(r.admin, api.WebPairRequest{})
	u2, _ := url.Parse(p2.URL)
	mu.Lock()
	now = now.Add(11 * time.Minute)
	mu.Unlock()
	if resp, _ := r.client().do("POST", "/pair", `{"code":"`+u2.Fragment+`"}`); resp.StatusCode != 401 {
		t.Errorf("expired link: %d", resp.StatusCode)
	}
	// A page served over https (a TLS proxy in front) gets a Secure cookie.
	r.s.cfg.Origins = []string{"https://box.tailnet.ts.net"}
	p3, _ := r.s.Pair(r.admin, api.WebPairRequest{})
	u3, _ := url.Parse(p3.URL)
	resp, _ = r.client().do("POST", "/pair", `{"code":"`+u3.Fragment+`"}`, "Origin", "https://box.tailnet.ts.net")
	if ck := resp.Header.Get("Set-Cookie"); resp.StatusCode != 200 || !strings.Contains(ck, "Secure") {
		t.Errorf("https origin: %d, cookie %q", resp.StatusCode, ck)
	}
}

// TestPairNoBroaderThanCaller: a workspace admin cannot pair a device for another
// workspace, nor one with a verb it lacks.
func TestPairNoBroaderThanCaller(t *testing.T) {
	r := newRig(t, Config{})
	ws := auth.Caller{Subject: "orch#1", Workspaces: []string{"w1"}, Verbs: []string{auth.VerbAdmin, auth.VerbRead}}
	if _, err := r.s.Pair(ws, api.WebPairRequest{Scope: "read", Workspaces: []string{"w2"}}); err == nil {
		t.Error("paired a device for another workspace")
	}
	if _, err := r.s.Pair(ws, api.WebPairRequest{Scope: "trigger"}); err == nil {
		t.Error("paired a device with a verb the caller lacks")
	}
	p, err := r.s.Pair(ws, api.WebPairRequest{Scope: "read"})
	if err != nil || strings.Join(p.Workspaces, ",") != "w1" {
		t.Errorf("read on the caller's workspace: %+v %v", p, err)
	}
}

// TestCrossSiteRefused: with a paired cookie, a state-changing request from another
// origin, with no Origin, or that the browser marks cross-site never reaches the API; a
// DNS-rebound Host is refused even for a GET; a route the app does not use is not
// reachable.
func TestCrossSiteRefused(t *testing.T) {
	r := newRig(t, Config{})
	c := r.client()
	c.pair("operate")
	for i, tt := range []struct{ origin, site string }{
		{"http://evil.example", ""}, {"", ""}, {"null", ""}, {r.ts.URL, "cross-site"}, {r.ts.URL, "same-site"},
		{strings.Replace(r.ts.URL, "http:", "https:", 1), ""},
	} {
		c.origin = tt.origin
		var hdr []string
		if tt.site != "" {
			hdr = []string{"Sec-Fetch-Site", tt.site}
		}
		if resp, body := c.do("POST", "/api/v1/runtimes/rt_w.a/pause", `{}`, hdr...); resp.StatusCode != 403 {
			t.Errorf("#%d: origin %q site %q: %d %s", i, tt.origin, tt.site, resp.StatusCode, body)
		}
	}
	if got := r.reachedAPI(); len(got) != 0 {
		t.Errorf("reached the API: %q", got)
	}
	c.origin = r.ts.URL
	if resp, body := c.do("POST", "/api/v1/runtimes/rt_w.a/pause", `{}`, "Sec-Fetch-Site", "same-origin"); resp.StatusCode != 200 {
		t.Fatalf("same origin: %d %s", resp.StatusCode, body)
	}
	if got := r.reachedAPI(); len(got) != 1 || !strings.HasPrefix(got[0], "POST /v1/runtimes/rt_w.a/pause as web:t#") {
		t.Errorf("reached: %q", got)
	}
	for _, p := range []string{"/api/v1/tokens", "/api/v1/audit", "/api/v1/runtimes/rt_w.a/stop", "/api/metrics", "/api/v1/health"} {
		if resp, _ := c.do("GET", p, ""); resp.StatusCode != 404 {
			t.Errorf("GET %s: %d, want 404", p, resp.StatusCode)
		}
	}
	if resp, _ := c.do("POST", "/api/v1/tokens", `{}`); resp.StatusCode != 404 {
		t.Errorf("POST /api/v1/tokens: %d", resp.StatusCode)
	}
	if resp, _ := c.do("GET", "/api/v1/runtimes", "", "Host", "evil.example"); resp.StatusCode != 403 {
		t.Errorf("rebound Host: %d", resp.StatusCode)
	}
	if got := r.reachedAPI(); len(got) != 1 {
		t.Errorf("reached: %q", got)
	}
}

// TestNotADeviceToken: only a device token opens /api, from the cookie only: an
// orchestrator's token in the cookie or an Authorization header of the request's own is
// refused, and an unpaired browser is told to pair.
func TestNotADeviceToken(t *testing.T) {
	r := newRig(t, Config{})
	tok, _, err := r.a.Issue(r.admin, auth.IssueRequest{Subject: "orchestrator", Workspaces: []string{"*"}, Verbs: []string{"read", "admin"}})
	if err != nil {
		t.Fatal(err)
	}
	c := r.client()
	if resp, _ := c.do("GET", "/api/v1/runtimes", "", "Authorization", "Bearer "+tok); resp.StatusCode != 401 {
		t.Errorf("bearer header: %d", resp.StatusCode)
	}
	u, _ := url.Parse(r.ts.URL)
	c.c.Jar.SetCookies(u, []*http.Cookie{{Name: CookieName, Value: tok}})
	if resp, body := c.do("GET", "/api/v1/runtimes", ""); resp.StatusCode != 401 || !strings.Contains(body, "device") {
		t.Errorf("orchestrator token in the cookie: %d %s", resp.StatusCode, body)
	}
	if got := r.reachedAPI(); len(got) != 0 {
		t.Errorf("reached: %q", got)
	}
}

// TestRevokedRefusedAtOnce: a device token revoked is refused on the next request, and
// an event stream it opened ends (within TokenCheck).
func TestRevokedRefusedAtOnce(t *testing.T) {
	r := newRig(t, Config{TokenCheck: 20 * time.Millisecond})
	c := r.client()
	c.pair("read")
	req, _ := http.NewRequest("GET", r.ts.URL+"/api/v1/events", nil)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := c.c.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("events: %v %v", resp, err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if line, _ := br.ReadString('\n'); !strings.HasPrefix(line, "data:") {
		t.Fatalf("first line %q", line)
	}
	list, _ := r.a.List(r.admin)
	if _, err := r.a.Revoke(r.admin, list[0].ID); err != nil {
		t.Fatal(err)
	}
	if resp, body := c.do("GET", "/api/v1/whoami", ""); resp.StatusCode != 401 || !strings.Contains(body, "revoked") {
		t.Errorf("after revoke: %d %s", resp.StatusCode, body)
	}
	ended := make(chan struct{})
	go func() { io.Copy(io.Discard, br); close(ended) }()
	select {
	case <-ended:
	case <-time.After(30 * time.Second):
		t.Fatal("the event stream outlived its revoked token")
	}
}

// TestWhoamiAndAssets: the app's page and files are served with a CSP that allows no
// script but its own; whoami tells the device's verbs.
func TestWhoamiAndAssets(t *testing.T) {
	r := newRig(t, Config{})
	c := r.client()
	for _, p := range []string{"/", "/pair", "/app.js", "/app.css"} {
		resp, body := c.do("GET", p, "")
		if resp.StatusCode != 200 || len(body) == 0 || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "script-src 'self'") {
			t.Errorf("GET %s: %d, CSP %q", p, resp.StatusCode, resp.Header.Get("Content-Security-Policy"))
		}
	}
	if resp, _ := c.do("POST", "/", ""); resp.StatusCode != 405 {
		t.Errorf("POST /: %d", resp.StatusCode)
	}
	c.pair("trigger")
	resp, body := c.do("GET", "/api/v1/whoami", "")
	if resp.StatusCode != 200 || !strings.Contains(body, `"verbs":["read","answer","trigger"]`) {
		t.Errorf("whoami: %d %s", resp.StatusCode, body)
	}
	_ = context.Background
}

// TestNoForceOverride: a device that may trigger still cannot ask for its prompt to be
// typed over a human's draft, in any spelling the API would take; a plain trigger goes.
func TestNoForceOverride(t *testing.T) {
	r := newRig(t, Config{})
	c := r.client()
	c.pair("trigger")
	for _, body := range []string{
		`{"workspace":"w","agent":"a","prompt":"p","force_override":true,"reason":"x"}`,
		`{"workspace":"w","agent":"a","prompt":"p","override_intent":"human_override","reason":"x"}`,
	} {
		if resp, got := c.do("POST", "/api/v1/triggers", body); resp.StatusCode != 403 {
			t.Errorf("%s: %d %s", body, resp.StatusCode, got)
		}
	}
	if got := r.reachedAPI(); len(got) != 0 {
		t.Errorf("reached: %q", got)
	}
	if resp, got := c.do("POST", "/api/v1/triggers", `{"workspace":"w","agent":"a","prompt":"p"}`); resp.StatusCode != 200 {
		t.Errorf("plain trigger: %d %s", resp.StatusCode, got)
	}
}

// fakeTerminal counts the views opened.
type fakeTerminal struct {
	mu     sync.Mutex
	opened []string
}

func (f *fakeTerminal) Open(_ context.Context, rt nudge.Runtime, _ func()) (TerminalView, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.opened = append(f.opened, rt.RuntimeID)
	return nil, errors.New("not in this test")
}

// TestTerminalOtherWorkspace: a device of workspace w1 asking for the terminal of a
// runtime of w2 is answered as if it did not exist, and no view of that pane is opened.
func TestTerminalOtherWorkspace(t *testing.T) {
	r := newRig(t, Config{})
	term := &fakeTerminal{}
	r.s.deps.Terminal = term
	r.s.deps.Runtimes = fakeRuntimes{"rt_w2.a": {RuntimeID: "rt_w2.a", WorkspaceID: "w2", PaneID: "%3"}}
	r.ts.Config.Handler = r.s.Handler()
	r.admin = auth.Caller{Subject: "orch#1", Workspaces: []string{"w1"}, Verbs: []string{auth.VerbAdmin, auth.VerbRead}}
	c := r.client()
	c.pair("read")
	for _, id := range []string{"rt_w2.a", "rt_w2.a/../rt_w2.a", "RT_W2.A"} {
		if resp, body := c.do("GET", "/api/v1/runtimes/"+id+"/terminal", ""); resp.StatusCode != 404 {
			t.Errorf("%s: %d %s", id, resp.StatusCode, body)
		}
	}
	if len(term.opened) != 0 {
		t.Errorf("views opened: %q", term.opened)
	}
}
