package benchmarks

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestWebFigures measures the web view in headless Chromium against a real daemon (the
// nudge binary, built here, on a private tmux server): how long from an event's
// publication (its own time stamp) until every open page shows it, with 1 and with 20
// pages open, the daemon's CPU while they watch, and the app's page weight. Run by hand
// (NUDGE_BENCH_WEB=1 go test -run TestWebFigures -v ./benchmarks); a figure is never a
// pass/fail test.
//
// The event is a runtime paused or resumed through the socket API; each page's fleet
// card shows a "paused" badge, watched by a MutationObserver the harness puts in the page
// (the app itself does not know it is measured). Pages are tabs of one browser.
func TestWebFigures(t *testing.T) {
	chrome := benchChromium(t)
	w := startWebDaemon(t)
	t.Logf("page weight: %s", w.pageWeight(t))

	// The daemon's side alone: Go clients that read the page's event stream as a page
	// does (a device's cookie, /api/v1/events), no browser.
	for _, n := range []int{1, 20} {
		readers, stop := w.streamReaders(t, n)
		lat, cpu, span := w.flips(t, nil, readers, 60)
		stop()
		slices.Sort(lat.onPage)
		t.Logf("%2d stream reader(s), no browser: event → card frame read p50 %.1f ms, p99 %.1f ms, max %.1f ms (%d samples); daemon CPU %.2f %% of a core over %.1f s",
			n, pctMS(lat.onPage, 50), pctMS(lat.onPage, 99), lat.onPage[len(lat.onPage)-1], len(lat.onPage), cpu, span.Seconds())
	}

	// NUDGE_BENCH_WEB_BROWSERS=1: each viewer in a Chromium of its own (its own browser
	// and network processes), not a tab of one.
	own := os.Getenv("NUDGE_BENCH_WEB_BROWSERS") != ""
	browser := headless(t, chrome)
	var tabs []context.Context
	for _, n := range []int{1, 20} {
		for len(tabs) < n {
			b := browser
			if own && len(tabs) > 0 {
				b = headless(t, chrome)
			}
			tabs = append(tabs, w.openTab(t, b))
		}
		lat, cpu, span := w.flips(t, tabs, nil, 60)
		for _, l := range [][]float64{lat.onPage, lat.arrived, lat.drawn} {
			slices.Sort(l)
		}
		t.Logf("%2d page(s): event → on every page p50 %.1f ms, p99 %.1f ms, max %.1f ms (%d samples); daemon CPU %.2f %% of a core over %.1f s",
			n, pctMS(lat.onPage, 50), pctMS(lat.onPage, 99), lat.onPage[len(lat.onPage)-1], len(lat.onPage), cpu, span.Seconds())
		t.Logf("%2d page(s): of which event → card frame in the page p50 %.1f ms, p99 %.1f ms; frame → drawn p50 %.1f ms, p99 %.1f ms",
			n, pctMS(lat.arrived, 50), pctMS(lat.arrived, 99), pctMS(lat.drawn, 50), pctMS(lat.drawn, 99))
	}
}

// latencies are a flip's times on each page (ms): the card drawn (onPage), its frame
// handed to the page's script (arrived), and between the two (drawn).
type latencies struct{ onPage, arrived, drawn []float64 }

// webDaemon is a nudge serve --web on a private tmux server, with one shell runtime.
type webDaemon struct {
	bin, dir, sock, tmuxSock, base, rt string
	cmd                                *exec.Cmd
	http                               *http.Client // on the unix socket
}

func startWebDaemon(t *testing.T, serveArgs ...string) *webDaemon {
	t.Helper()
	dir, err := os.MkdirTemp("", "nwb")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin, err := os.Getenv("NUDGE_BENCH_WEB_BIN"), error(nil) // another build, to compare in one run
	if bin == "" {
		bin, err = buildNudgeBinary(dir)
	}
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	w := &webDaemon{bin: bin, dir: dir, sock: filepath.Join(dir, "s.sock"), tmuxSock: fmt.Sprintf("nudge-wb-%d", os.Getpid()), base: "http://" + addr}
	w.http = &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", w.sock)
	}}}
	w.cmd = exec.Command(bin, "serve", "--state-dir", filepath.Join(dir, "state"), "--socket", w.sock, "--tmux-socket", w.tmuxSock,
		"--tmux-config", "/dev/null", "--root", dir, "--web", addr, "--log-level", "warn")
	w.cmd.Args = append(w.cmd.Args, serveArgs...)
	w.cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+filepath.Join(dir, "config"))
	logf, err := os.Create(filepath.Join(dir, "daemon.log"))
	if err != nil {
		t.Fatal(err)
	}
	w.cmd.Stderr = logf
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		w.cmd.Process.Signal(os.Interrupt)
		w.cmd.Wait()
		exec.Command("tmux", "-L", w.tmuxSock, "kill-server").Run()
	})
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := w.cli("ls"); err == nil {
			break
		} else if time.Now().After(deadline) {
			b, _ := os.ReadFile(filepath.Join(dir, "daemon.log"))
			t.Fatalf("the daemon did not start: %v\n%s", err, b)
		}
	}
	out, err := w.cli("spawn", "--workspace", "wb", "--role", "sh", "--agent", "shell", "--dir", dir, "--", "sh")
	if err != nil {
		t.Fatal(err)
	}
	var rt struct {
		ID string `json:"runtime_id"`
	}
	json.Unmarshal(out, &rt)
	w.rt = rt.ID
	return w
}

func buildNudgeBinary(dir string) (string, error) {
	out := filepath.Join(dir, "nudge")
	cmd := exec.Command("go", "build", "-o", out, "./cmd/nudge")
	cmd.Dir = ".."
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v: %s", err, b)
	}
	return out, nil
}

func (w *webDaemon) cli(args ...string) ([]byte, error) {
	cmd := exec.Command(w.bin, args...)
	cmd.Env = append(os.Environ(), "NUDGE_SOCKET="+w.sock)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("nudge %v: %v: %s", args, err, errb.String())
	}
	return out, nil
}

// openTab pairs a new viewer (a browser context of its own: its own cookie and
// connections, as another device) and opens the fleet in it, with the harness's observer:
// it notes when the runtime's paused badge appears or goes (performance.timeOrigin + now,
// ms).
func (w *webDaemon) openTab(t *testing.T, browser context.Context) context.Context {
	t.Helper()
	ctx, _ := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	link, err := w.cli("web", "pair", "--scope", "read", "--name", "bench", "--no-qr")
	if err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(strings.TrimSpace(string(link))), chromedp.WaitVisible("#pair"), chromedp.Click("#pair")); err != nil {
		t.Fatal(err)
	}
	obs := `(() => { window.__seen = []; let last = null;
	  const look = () => { const c = document.querySelector('[data-runtime="` + w.rt + `"]'); if (!c) return;
	    const p = !!c.querySelector('[data-paused]'); if (last !== null && p !== last) window.__seen.push(performance.timeOrigin + performance.now()); last = p; };
	  new MutationObserver(look).observe(document.getElementById('main'), { subtree: true, childList: true }); look();
	  window.__arrive = []; let lastA = false; // unpaused between runs of flips
	  S.es.addEventListener('card', (m) => { const at = performance.timeOrigin + performance.now(); const c = JSON.parse(m.data);
	    if (c.runtime_id !== '` + w.rt + `') return; const p = (c.badges || []).includes('paused');
	    if (lastA !== null && p !== lastA) window.__arrive.push(at); lastA = p; });
	  return true; })()`
	for range 5 { // the page's own navigation after pairing cuts a poll short
		if err = chromedp.Do(ctx, chromedp.Poll[chromedp.Void](`location.pathname === '/' && !!document.querySelector('[data-runtime="`+w.rt+`"]')`,
			chromedp.WithPollingTimeout(20*time.Second))); err == nil || !strings.Contains(err.Error(), "-32000") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err == nil {
		err = chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](obs))
	}
	if err != nil {
		page, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href + ' es=' + (S.es && S.es.readyState) + ' loaded=' + S.loaded + ' ' + JSON.stringify(performance.getEntriesByType('resource').map(e => e.name + ' ' + Math.round(e.responseEnd))) + '\n' + document.body.innerText`))
		t.Fatalf("open a page: %v\n%s", err, page)
	}
	return ctx
}

// flips pauses and resumes the runtime n times, each after the last was on every page
// and with every reader; it returns every page's (or reader's) latency of every flip
// (ms), the daemon's CPU (% of a core) and how long it took.
func (w *webDaemon) flips(t *testing.T, tabs []context.Context, readers []*streamReader, n int) (latencies, float64, time.Duration) {
	t.Helper()
	times := w.followPaused(t)
	var base []int
	for _, tab := range tabs {
		k, err := chromedp.Run(tab, chromedp.Evaluate[int](`window.__seen.length`))
		if err != nil {
			t.Fatal(err)
		}
		base = append(base, k)
	}
	rbase := make([]int, len(readers))
	for j, r := range readers {
		rbase[j] = len(r.seen())
	}
	cpu0, start := procCPU(w.cmd.Process.Pid), time.Now()
	var evAt []float64
	for i := range n {
		verb := "pause"
		if i%2 == 1 {
			verb = "resume"
		}
		if _, err := w.cli(verb, w.rt); err != nil {
			t.Fatal(err)
		}
		select {
		case at := <-times:
			evAt = append(evAt, at)
		case <-time.After(10 * time.Second):
			t.Fatal("no runtime event")
		}
		for j, tab := range tabs {
			expr := fmt.Sprintf(`window.__seen.length >= %d`, base[j]+i+1)
			if err := chromedp.Do(tab, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
				t.Fatalf("page %d never showed flip %d: %v", j, i, err)
			}
		}
		for j, r := range readers {
			for deadline := time.Now().Add(20 * time.Second); len(r.seen()) < rbase[j]+i+1; time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("reader %d never read flip %d", j, i)
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	span := time.Since(start)
	cpu := float64(procCPU(w.cmd.Process.Pid)-cpu0) / clockTicks / span.Seconds() * 100
	var lat latencies
	for j, tab := range tabs {
		seen, err := chromedp.Run(tab, chromedp.Evaluate[[]float64](`window.__seen`))
		if err != nil {
			t.Fatal(err)
		}
		arrive, err := chromedp.Run(tab, chromedp.Evaluate[[]float64](`window.__arrive`))
		if err != nil {
			t.Fatal(err)
		}
		for i, at := range evAt {
			lat.onPage = append(lat.onPage, seen[base[j]+i]-at)
			if k := len(arrive) - n + i; k >= 0 {
				lat.arrived = append(lat.arrived, arrive[k]-at)
				lat.drawn = append(lat.drawn, seen[base[j]+i]-arrive[k])
			}
		}
	}
	for j, r := range readers {
		seen := r.seen()
		for i, at := range evAt {
			lat.onPage = append(lat.onPage, seen[rbase[j]+i]-at)
		}
	}
	return lat, cpu, span
}

// streamReader reads the web view's event stream as a page does, with a paired device's
// cookie, and notes when the runtime's card changes its paused badge (unix ms).
type streamReader struct {
	mu    sync.Mutex
	times []float64
}

func (r *streamReader) seen() []float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]float64(nil), r.times...)
}

// streamReaders pairs n devices and opens a reader of each one's stream; stop closes
// them.
func (w *webDaemon) streamReaders(t *testing.T, n int) (_ []*streamReader, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	var out []*streamReader
	for range n {
		link, err := w.cli("web", "pair", "--scope", "read", "--name", "reader", "--no-qr")
		if err != nil {
			t.Fatal(err)
		}
		code := strings.TrimSpace(string(link))
		code = code[strings.IndexByte(code, '#')+1:]
		req, _ := http.NewRequest("POST", w.base+"/pair", strings.NewReader(`{"code":"`+code+`"}`))
		req.Header.Set("Origin", w.base)
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("pair a reader: %v %v", err, resp)
		}
		resp.Body.Close()
		req, _ = http.NewRequestWithContext(ctx, "GET", w.base+"/api/v1/events", nil)
		req.Header.Set("Accept", "text/event-stream")
		for _, c := range resp.Cookies() {
			req.AddCookie(c)
		}
		if resp, err = http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
			t.Fatalf("a reader's stream: %v %v", err, resp)
		}
		r := &streamReader{}
		go r.read(resp.Body, w.rt)
		out = append(out, r)
	}
	return out, cancel
}

func (r *streamReader) read(body io.ReadCloser, rt string) {
	defer body.Close()
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	card, last := false, 0 // unpaused between runs of flips
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case bytes.Equal(line, []byte("event: card")):
			card = true
		case card && bytes.HasPrefix(line, []byte("data: ")):
			at := float64(time.Now().UnixNano()) / 1e6
			card = false
			var c struct {
				ID     string   `json:"runtime_id"`
				Badges []string `json:"badges"`
			}
			if json.Unmarshal(line[6:], &c) != nil || c.ID != rt {
				continue
			}
			p := 0
			if slices.Contains(c.Badges, "paused") {
				p = 1
			}
			if p != last {
				r.mu.Lock()
				r.times = append(r.times, at)
				r.mu.Unlock()
			}
			last = p
		case len(line) == 0:
			card = false
		}
	}
}

// followPaused reads the daemon's event stream and sends the time (unix ms) of every
// runtime event whose paused flag changed.
func (w *webDaemon) followPaused(t *testing.T) <-chan float64 {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://nudge/v1/events", nil)
	resp, err := w.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan float64, 16)
	go func() {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		paused := false // the flips start and end unpaused (n is even)
		for sc.Scan() {
			var ev struct {
				Type    string    `json:"type"`
				Time    time.Time `json:"time"`
				Runtime *struct {
					ID     string `json:"runtime_id"`
					Paused bool   `json:"paused"`
				} `json:"runtime"`
			}
			if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Type != "runtime" || ev.Runtime == nil || ev.Runtime.ID != w.rt {
				continue
			}
			if ev.Runtime.Paused != paused {
				paused = ev.Runtime.Paused
				out <- float64(ev.Time.UnixNano()) / 1e6
			}
		}
	}()
	return out
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times on Linux.
const clockTicks = 100

// procCPU is pid's user+system time in clock ticks (0 where /proc has none).
func procCPU(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return u + s
}

// pageWeight is what a browser loads to show the fleet: the page and its files, as
// served and gzipped.
func (w *webDaemon) pageWeight(t *testing.T) string {
	var raw, gz int
	var parts []string
	for _, p := range []string{"/", "/app.js", "/app.css", "/icon.svg"} {
		resp, err := http.Get(w.base + p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var zb bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&zb, gzip.BestCompression)
		zw.Write(b)
		zw.Close()
		raw, gz = raw+len(b), gz+zb.Len()
		parts = append(parts, fmt.Sprintf("%s %d", p, len(b)))
	}
	return fmt.Sprintf("%d bytes in 4 requests (%s), %d gzipped (served uncompressed), then the fleet's own data from /api", raw, strings.Join(parts, ", "), gz)
}

func pctMS(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted)-1) * p / 100)
	return sorted[i]
}

// TestWebBusyFleetCPU: the daemon's CPU while a busy fleet works (10 shell panes, each
// printing a burst of 20 lines every 0.5 s, and a trigger to one of them every 200 ms,
// whose receipts are events on the stream) with
// 0, 1 and 10 pages of the web view open on it: the cost of a viewer. Run by hand
// (NUDGE_BENCH_WEB=1 go test -run TestWebBusyFleetCPU -v ./benchmarks).
func TestWebBusyFleetCPU(t *testing.T) {
	chrome := benchChromium(t)
	w := startWebDaemon(t, "--rate-limit", "1000/min") // every trigger goes: 3 a minute per pane is past the default
	for i := range 10 {
		if _, err := w.cli("spawn", "--workspace", "wb", "--role", fmt.Sprintf("busy%d", i), "--agent", "shell", "--dir", w.dir, "--",
			"sh", "-c", "while :; do i=0; while [ $i -lt 20 ]; do echo busy line $i; i=$((i+1)); done; sleep 0.5; done"); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(3 * time.Second) // the fleet settles into its rhythm
	browser := headless(t, chrome)
	const window = 20 * time.Second
	var tabs []context.Context
	for _, n := range []int{0, 1, 10} {
		for len(tabs) < n {
			tabs = append(tabs, w.openTab(t, browser))
		}
		time.Sleep(2 * time.Second)
		events := w.countEvents(t, window)
		cpu0, start := procCPU(w.cmd.Process.Pid), time.Now()
		for i := 0; time.Since(start) < window; i++ { // and a trigger every 200 ms, round the fleet
			w.cli("trigger", "--workspace", "wb", "--agent", fmt.Sprintf("busy%d", i%10), "--id", fmt.Sprintf("v%d-%d", n, i), "status?")
			time.Sleep(200 * time.Millisecond)
		}
		cpu := float64(procCPU(w.cmd.Process.Pid)-cpu0) / clockTicks / time.Since(start).Seconds() * 100
		t.Logf("%2d page(s) open on a busy fleet of 10 panes: daemon CPU %.2f %% of a core over %v (%d events on the stream)", n, cpu, window, <-events)
	}
}

// countEvents counts the events on the daemon's stream for d (the socket API's own stream,
// one more reader beside the pages) and sends the count when d is over.
func (w *webDaemon) countEvents(t *testing.T, d time.Duration) <-chan int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://nudge/v1/events", nil)
	resp, err := w.http.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	out := make(chan int, 1)
	go func() {
		defer cancel()
		defer resp.Body.Close()
		n := 0
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if len(bytes.TrimSpace(sc.Bytes())) > 0 {
				n++
			}
		}
		out <- n
	}()
	return out
}

// benchChromium skips the test unless NUDGE_BENCH_WEB is set and chromium is installed,
// and returns its path.
func benchChromium(t *testing.T) string {
	t.Helper()
	if os.Getenv("NUDGE_BENCH_WEB") == "" {
		t.Skip("set NUDGE_BENCH_WEB=1 (needs chromium)")
	}
	chrome, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("no chromium")
	}
	return chrome
}

// headless starts a headless chromium for the test, closed when it ends.
func headless(t *testing.T, chrome string) context.Context {
	t.Helper()
	actx, acancel := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chrome), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.UserDataDir(t.TempDir()))...)
	t.Cleanup(acancel)
	browser, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	if err := chromedp.Do(browser, chromedp.Navigate("about:blank")); err != nil {
		t.Fatal(err)
	}
	return browser
}
