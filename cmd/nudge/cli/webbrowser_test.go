package cli

import (
	"context"
	"encoding/json"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/nudgehq/nudge/cmd/nudge/daemon"
	"github.com/nudgehq/nudge/cmd/nudge/standin"
)

// The web view in a real browser: headless Chromium (Debian's chromium package; .ci/run
// installs it) driven over its DevTools protocol by chromedp, a test-only dependency.

// chromium finds the browser: $NUDGE_TEST_CHROMIUM, else chromium on PATH. In CI it is
// installed; elsewhere the test is skipped, saying so.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("NUDGE_TEST_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no chromium in CI: .ci/install installs Debian's chromium package")
	}
	t.Skip("no chromium (apt-get install chromium, or set NUDGE_TEST_CHROMIUM)")
	return ""
}

// browserCtx starts a headless Chromium with a window of w×h (a phone's viewport when
// mobile) for the test's length.
func browserCtx(t *testing.T, w, h int64, mobile bool) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium(t)), chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.WindowSize(int(w), int(h)), chromedp.UserDataDir(t.TempDir()))
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	ctx, tcancel := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() { tcancel(); cancel(); acancel() })
	if mobile {
		must(t, "emulate", chromedp.Do(ctx, chromedp.EmulateViewport(w, h, chromedp.EmulateScale(2), chromedp.EmulateMobile, chromedp.EmulateTouch)))
	} else {
		must(t, "viewport", chromedp.Do(ctx, chromedp.EmulateViewport(w, h)))
	}
	return ctx
}

func must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// waitJS waits until the page's expression is true (the page updates itself from the
// event stream; the test only watches it).
func waitJS(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	var err error
	for range 5 { // a poll the page's own navigation (after pairing) cut short starts again
		err = chromedp.Do(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(60*time.Second)))
		if err == nil || !strings.Contains(err.Error(), "(-32000)") {
			break
		}
		time.Sleep(100 * time.Millisecond) // the new page's context is being made
	}
	if err != nil {
		html, _ := chromedp.Run(context.WithoutCancel(ctx), chromedp.Evaluate[string](`document.getElementById('main').innerText`))
		t.Fatalf("%s: %v\nthe page shows:\n%s", what, err, html)
	}
}

func jsString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// TestWebBrowser drives the web view in headless Chromium at a desktop size and at a
// phone's (390×844): pair with the printed link (its code leaves the address bar), see
// the fleet, pause the demo agent and send it a prompt from the page (it waits, queued),
// resume it and watch the receipt reach acked with the reply the agent wrote in its own
// session record, watch its terminal (a control client with ignore-size: the window's
// size never changes), switch typing on and type into a stand-in's pane with the
// keyboard and the key bar (Esc, Tab, Ctrl then c, an arrow, Enter), approve a real
// stand-in's dialog, and revoke the device: the open page says it is not paired. A
// read-only device then sees the terminal with no typing toggle. Screenshots go to
// $NUDGE_TEST_SCREENSHOTS when it is set (docs/).
func TestWebBrowser(t *testing.T) {
	chromium(t)
	td := webSetup(t, func(cfg *daemon.Config) { cfg.Panes.Self = buildWatchBinary(t) })
	demo := td.spawnDemo("w1", "demo")
	size := func(pane string) string {
		return strings.TrimSpace(td.tmux("display-message", "-p", "-t", pane, "#{window_width}x#{window_height}"))
	}
	before := size(demo.PaneID)
	for _, vp := range []struct {
		name   string
		w, h   int64
		mobile bool
	}{{"desktop", 1280, 860, false}, {"phone", 390, 844, true}} {
		t.Run(vp.name, func(t *testing.T) {
			dlg, keys := td.spawnStandin("dlg-"+vp.name, claudeBash+`show "touch web-`+vp.name+`.txt"`+"\n"+standinKeys, "", "NEEDS_CONFIRMATION")
			kb, kbKeys := td.spawnStandin("kb-"+vp.name, composerBox+rawKeys, "", "READY")
			kbBefore := size(kb.PaneID)
			ctx := browserCtx(t, vp.w, vp.h, vp.mobile)
			base := webPair(t, td, ctx, "type", vp.name)
			waitJS(t, ctx, "the fleet", `location.pathname === '/' && !!document.querySelector('#fleet [data-runtime="`+demo.RuntimeID+`"]') && !!document.querySelector('#fleet [data-runtime="`+dlg.RuntimeID+`"] [data-dialog]')`)
			if href, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href`)); href != base+"/" {
				t.Errorf("after pairing the page is at %s", href)
			}

			// Pause from the page, send a prompt: it waits; resume: it is delivered, acked,
			// and the reply is the one the demo agent wrote in its session record.
			openRuntime(t, ctx, demo.RuntimeID)
			must(t, "pause", chromedp.Do(ctx, chromedp.Click("#pause")))
			waitJS(t, ctx, "paused", `!document.getElementById('resume').hidden`)
			marker := "WEB_" + strings.ToUpper(vp.name)
			must(t, "prompt", chromedp.Do(ctx, chromedp.SendKeys("#prompt", "Say "+marker), chromedp.Click("#send")))
			waitJS(t, ctx, "queued while paused", `['queued','deferred'].includes((document.querySelector('#triggers [data-state]')||{dataset:{}}).dataset.state)`)
			id, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#triggers [data-trigger]').dataset.trigger`))
			must(t, "trigger id", err)
			must(t, "resume", chromedp.Do(ctx, chromedp.Click("#resume")))
			waitJS(t, ctx, "acked", `document.querySelector('#triggers [data-trigger="`+id+`"] [data-state]').dataset.state === 'acked'`)
			waitJS(t, ctx, "the reply from the agent's record", `((document.querySelector('#triggers [data-trigger="`+id+`"] .reply')||{}).textContent||'').startsWith('Done. You said: "Say `+marker+`"')`)

			// The terminal: the pane's screen, through a read-only control client with ignore-size.
			must(t, "terminal", chromedp.Do(ctx, chromedp.Click("#term-toggle")))
			waitJS(t, ctx, "the terminal shows the pane", `document.getElementById('term').textContent.includes('`+marker+`')`)
			viewer := false
			for _, f := range strings.Split(td.tmux("list-clients", "-F", "#{client_flags}"), "\n") {
				viewer = viewer || strings.Contains(f, "ignore-size") && strings.Contains(f, "read-only")
			}
			if !viewer {
				t.Errorf("no control client with ignore-size and read-only: %q", td.tmux("list-clients", "-F", "#{client_flags}"))
			}

			// Typing: off until switched on; then the keyboard and the key bar reach the pane.
			openRuntime(t, ctx, kb.RuntimeID)
			must(t, "keys page", chromedp.Do(ctx, chromedp.Click("#term-toggle"), chromedp.WaitVisible("#term-type")))
			waitJS(t, ctx, "typing off at first", `document.getElementById('typing').hidden && !S.typing`)
			must(t, "typing on", chromedp.Do(ctx, chromedp.Click("#term-type"), chromedp.WaitVisible("#keybar")))
			// The key bar's buttons are pressed by the element (a click at coordinates taken
			// a moment before lands on the neighbour when the terminal above redraws on a
			// loaded machine, as a finger would not).
			press := func(sel string) chromedp.Action[chromedp.Void] {
				return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
					_, err := chromedp.Evaluate[bool](`(document.querySelector(`+strconv.Quote(sel)+`).click(), true)`)(ctx, tg)
					return chromedp.Void{}, err
				}
			}
			must(t, "type", chromedp.Do(ctx, chromedp.SendKeys("#term-input", "hi"),
				press(`#keybar [data-key="Escape"]`), press(`#keybar [data-key="Tab"]`),
				press("#key-ctrl"), chromedp.SendKeys("#term-input", "c"),
				press(`#keybar [data-key="Up"]`), press(`#keybar [data-key="Enter"]`)))
			waitJS(t, ctx, "keys sent", `!S.keysBusy && S.keys.length === 0 && document.getElementById('term-msg').textContent === ''`)
			if vp.mobile {
				shot(t, ctx, "web-phone-keys.png")
			}
			if got, want := td.keysAfterSentinel(kb.PaneID, kbKeys), "hi\x1b\t\x03\x1b[A\r"; got != want {
				t.Errorf("the pane got %q, want %q", got, want)
			}
			found := false
			for _, r := range td.runtimeRecords(kb.RuntimeID) {
				found = found || r.Event == "terminal_keys" && strings.HasPrefix(r.Subject, "web:"+vp.name+"#")
			}
			if !found {
				t.Errorf("no terminal_keys audit record by the device: %+v", td.runtimeRecords(kb.RuntimeID))
			}
			if got := size(kb.PaneID); got != kbBefore {
				t.Errorf("the window's size changed while the page typed into it: %s, was %s", got, kbBefore)
			}

			// The dialog: approve it from the page with a reason.
			openRuntime(t, ctx, dlg.RuntimeID)
			must(t, "dialog page", chromedp.Do(ctx, chromedp.WaitVisible("#dialog button.primary")))
			must(t, "reason", chromedp.Do(ctx, chromedp.SendKeys("#reason", "approved from the "+vp.name)))
			if vp.mobile {
				must(t, "scroll", chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`)))
				shot(t, ctx, "web-phone.png")
			}
			must(t, "answer", chromedp.Do(ctx, chromedp.Click("#dialog button.primary")))
			waitJS(t, ctx, "answered", `document.getElementById('answer-msg').textContent.startsWith('Answered')`)
			if got := td.keysAfterSentinel(dlg.PaneID, keys); got != "1" {
				t.Errorf("keys the dialog got: %q, want 1", got)
			}
			recs := td.runtimeRecords(dlg.RuntimeID)
			found = false
			for _, r := range recs {
				found = found || r.Event == "dialog_answered" && strings.HasPrefix(r.Subject, "web:"+vp.name+"#") && strings.Contains(r.Reason, "approved from the "+vp.name)
			}
			if !found {
				t.Errorf("no dialog_answered audit record by the device: %+v", recs)
			}
			if !vp.mobile {
				must(t, "fleet", chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`location.hash = '#/'`)))
				waitJS(t, ctx, "the fleet again", `!!document.querySelector('#fleet [data-last]')`)
				shot(t, ctx, "web-desktop.png")
			}
			if got := size(demo.PaneID); got != before {
				t.Errorf("the window's size changed: %s, was %s", got, before)
			}

			// Revoked: the open page's stream ends and it says it is not paired.
			if _, errOut, code := td.runCLI("token", "revoke", deviceTokenID(t, td, "web:"+vp.name)); code != 0 {
				t.Fatal(errOut)
			}
			waitJS(t, ctx, "not paired after revoke", `!!document.getElementById('unpaired')`)

			// A read-only device sees the terminal and no way to type.
			webPair(t, td, ctx, "read", vp.name+"-ro")
			waitJS(t, ctx, "the fleet", `location.pathname === '/' && !!document.querySelector('#fleet')`)
			openRuntime(t, ctx, kb.RuntimeID)
			must(t, "read-only terminal", chromedp.Do(ctx, chromedp.Click("#term-toggle")))
			waitJS(t, ctx, "no typing for a read-only device", `!document.getElementById('term').hidden && !document.getElementById('term-type') && !document.getElementById('keybar') && !document.getElementById('term-input')`)
		})
	}
}

// composerBox draws an idle Claude Code composer (READY under the claude pack).
const composerBox = `printf '╭────────────────────────────────────────╮\n│ ❯                                      │\n╰────────────────────────────────────────╯\n'
`

// rawKeys is standinKeys with the terminal raw: Ctrl-C reaches the file as \x03 (no
// signal) and Enter as \r.
var rawKeys = strings.Replace(standinKeys, "stty -icanon -echo min 1", "stty raw -echo", 1)

// openRuntime shows runtime id's page and waits until it is drawn (not the page before).
func openRuntime(t *testing.T, ctx context.Context, id string) {
	t.Helper()
	must(t, "runtime page", chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`location.hash = '#/rt/`+id+`'`)))
	waitJS(t, ctx, "the page of "+id, `(document.getElementById('runtime')||{dataset:{}}).dataset.runtime === `+jsString(id)+` && !!document.getElementById('term-toggle')`)
}

// spawnDemo spawns the demo agent (nudge demo-agent: the daemon's Panes.Self must be a
// nudge binary) and waits until it is ready.
func (td *testDaemon) spawnDemo(ws, role string) runtimeView {
	td.t.Helper()
	out, errOut, code := td.runCLI("spawn", "--workspace", ws, "--role", role, "--agent", "demo", "--dir", td.cfg.Panes.Roots[0], "-o", "json")
	var rt runtimeView
	if code != 0 || json.Unmarshal([]byte(out), &rt) != nil {
		td.t.Fatalf("spawn --agent demo: %d %s%s", code, out, errOut)
	}
	return td.waitRuntime(rt.RuntimeID, func(r runtimeView) bool { return r.Status == "ready" && r.Readiness == "READY" })
}

// webPair pairs the browser of ctx with scope through the link `nudge web pair` prints
// (its code leaves the address bar at once) and returns the page's base URL.
func webPair(t *testing.T, td *testDaemon, ctx context.Context, scope, name string) string {
	t.Helper()
	out, errOut, code := td.runCLI("web", "pair", "--scope", scope, "--name", name, "--no-qr")
	if code != 0 {
		t.Fatalf("nudge web pair: %s", errOut)
	}
	link, _ := url.Parse(strings.TrimSpace(out))
	must(t, "open the link", chromedp.Do(ctx, chromedp.Navigate(link.String()), chromedp.WaitVisible("#pair")))
	if href, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href`)); strings.Contains(href, link.Fragment) {
		t.Errorf("the pairing code stays in the address bar: %s", href)
	}
	must(t, "pair", chromedp.Do(ctx, chromedp.Click("#pair")))
	return link.Scheme + "://" + link.Host
}

// shot saves the page as name under $NUDGE_TEST_SCREENSHOTS (the docs' pictures), else
// in the test's temp dir.
func shot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("NUDGE_TEST_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	must(t, "screenshot", err)
	must(t, "save screenshot", os.WriteFile(filepath.Join(dir, name), png, 0o644))
}

// deviceTokenID is the id of the issued token of subject (nudge token ls --json prints one
// token as an object, several as an array).
func deviceTokenID(t *testing.T, td *testDaemon, subject string) string {
	t.Helper()
	type token struct {
		ID      string `json:"jti"`
		Subject string `json:"sub"`
	}
	out, _, _ := td.runCLI("token", "ls", "--json")
	var list []token
	if json.Unmarshal([]byte(out), &list) != nil {
		var one token
		if err := json.Unmarshal([]byte(out), &one); err != nil {
			t.Fatalf("nudge token ls --json: %v: %s", err, out)
		}
		list = []token{one}
	}
	for _, tok := range list {
		if tok.Subject == subject {
			return tok.ID
		}
	}
	t.Fatalf("no token %s in %s", subject, out)
	return ""
}

// TestWebBrowserClaudeDialog: Claude Code itself (against the loopback model stand-in)
// asks to run a command; a phone paired with the answer scope approves it from the web
// view's dialog card, and the command runs (the turn is acked).
func TestWebBrowserClaudeDialog(t *testing.T) {
	chromium(t)
	ft := startFullTurns(t, agentCase{agent: "claude", env: "NUDGE_TEST_CLAUDE", pkg: "@anthropic-ai/claude-code", api: standin.Messages,
		config: func(cfg *daemon.Config) { cfg.Web.Addr, cfg.Inject.AckTimeout = "127.0.0.1:0", 3*time.Minute }})
	ft.send("tool", "create the file standin:tool=`touch WEB_APPROVED`")
	ft.waitReadiness("NEEDS_CONFIRMATION")
	ctx := browserCtx(t, 390, 844, true)
	out, errOut, code := ft.td.runCLI("web", "pair", "--scope", "answer", "--name", "phone", "--no-qr")
	if code != 0 {
		t.Fatalf("nudge web pair: %s", errOut)
	}
	must(t, "pair", chromedp.Do(ctx, chromedp.Navigate(strings.TrimSpace(out)), chromedp.WaitVisible("#pair"), chromedp.Click("#pair")))
	waitJS(t, ctx, "the dialog badge", `location.pathname === '/' && !!document.querySelector('#fleet [data-runtime="`+ft.rt.RuntimeID+`"] [data-dialog]')`)
	must(t, "runtime page", chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`location.hash = '#/rt/`+ft.rt.RuntimeID+`'`),
		chromedp.WaitVisible("#dialog button.primary"), chromedp.SendKeys("#reason", "approved on the phone"), chromedp.Click("#dialog button.primary")))
	waitJS(t, ctx, "answered", `document.getElementById('answer-msg').textContent.startsWith('Answered')`)
	ft.waitAcked("tool")
	mark := filepath.Join(ft.td.cfg.Panes.Roots[0], "WEB_APPROVED")
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(mark); err == nil {
			return
		}
	}
	t.Fatalf("the command approved from the page did not run\nscreen:\n%s", ft.screen())
}
