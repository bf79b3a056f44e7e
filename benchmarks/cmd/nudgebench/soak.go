package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nudgehq/nudge/benchmarks/internal/panereader"
)

// The soak (-phases soak): -soak-n triggers sent one after another over one kept-alive
// API connection, round-robin to -soak-panes plain panes, while at most -soak-backlog of
// them are not closed yet, so the daemon is delivering a backlog the whole time. Every
// -soak-every triggers the harness stops sending, waits for the backlog to be delivered,
// and prints a row: the store on disk, the daemon's RSS right away and after -soak-quiet
// with nothing sent (the store's idle release runs 10 s after its last write), the accept
// latency (request → API answer) of that stretch's triggers sent while others were still
// being delivered, and the delivery rate. Row 0 is the fresh daemon with its panes, after
// the same quiet. At the end: `nudge audit --verify` and `--verify --archive`.
//
// Retention is the daemon's: pass it with -serve-args (see benchmarks/README.md).

// soakRow is one checkpoint of the soak.
type soakRow struct {
	sent           int
	store, creates float64 // MB: nudge.db, nudge.db.creates
	used           float64 // MB: nudge.db's pages in use (/metrics: file − free)
	archive        float64 // MB: the sealed audit segments
	segments       int
	rssBusy, rss   float64 // MB: right after the backlog was delivered, at the end of the quiet
	rssLow         float64 // MB: the lowest RSS seen in the quiet (sampled every second)
	accept         []int64 // ns, request → API answer, sent while delivering
	health         []int64 // ns, GET /v1/health on the same connection after every 10th trigger: the API's floor
	acceptIdle     int     // samples sent with nothing outstanding (not in accept)
	rate           float64 // triggers closed per second over the stretch
	load           string
}

type soakResult struct {
	rows           []soakRow
	verify, archiv string
	serveArgs      []string
}

// soak runs the soak against b.e.
func (b *bench) soak() (*soakResult, error) {
	o := b.o
	for len(b.panes) < o.soakPanes {
		p, err := b.e.spawn(fmt.Sprintf("s%03d", len(b.panes)), "bench")
		if err != nil {
			return nil, fmt.Errorf("spawn pane %d: %w", len(b.panes), err)
		}
		b.panes = append(b.panes, p)
	}
	res := &soakResult{serveArgs: b.e.serveArgs}
	time.Sleep(o.soakQuiet)
	res.rows = append(res.rows, b.soakMeasure(soakRow{load: loadavg()}, 0))
	b.soakPrint(os.Stderr, res.rows[0])
	for sent := 0; sent < o.soakN; {
		n := min(o.soakEvery, o.soakN-sent)
		r, err := b.soakStretch(sent, n)
		if err != nil {
			return res, err
		}
		sent += n
		r.sent = sent
		r = b.soakMeasure(r, o.soakQuiet)
		res.rows = append(res.rows, r)
		b.soakPrint(os.Stderr, r)
	}
	res.verify = b.soakVerify(false)
	res.archiv = b.soakVerify(true)
	return res, nil
}

// soakStretch sends n triggers (numbered from base) over one connection with at most
// -soak-backlog open, and waits until every one is closed.
func (b *bench) soakStretch(base, n int) (soakRow, error) {
	o := b.o
	raw, err := dialRaw(b.e.apiSock) // a new connection: the API closes one idle over the quiet
	if err != nil {
		return soakRow{}, err
	}
	defer raw.close()
	ev := b.e.events
	r := soakRow{}
	start := time.Now()
	closed0 := ev.finals()
	sent := 0
	for k := 0; k < n; k++ {
		for open := sent - int(ev.finals()-closed0); open >= o.soakBacklog; open = sent - int(ev.finals()-closed0) {
			time.Sleep(200 * time.Microsecond)
		}
		open := sent - int(ev.finals()-closed0)
		seq := base + k
		p := b.panes[seq%o.soakPanes]
		marker := panereader.Marker(seq)
		body := strings.Repeat("s", promptLen-len(marker)) + marker
		id := fmt.Sprintf("sk%d", seq)
		ev.expectFinal(id)
		js, _ := json.Marshal(map[string]any{"trigger_id": id, "workspace": p.workspace(), "agent": p.rt.Role, "prompt": body})
		t0 := panereader.Mono()
		status, rb, err := raw.send(request("/v1/triggers", js))
		if err != nil {
			return r, err
		}
		d := panereader.Mono() - t0
		if status != http.StatusAccepted {
			return r, fmt.Errorf("trigger %s: %d: %s", id, status, rb)
		}
		sent++
		if k%10 == 9 {
			t0 := panereader.Mono()
			if status, rb, err := raw.send(healthReq); err != nil || status != http.StatusOK {
				return r, fmt.Errorf("health: %d %s: %v", status, rb, err)
			}
			r.health = append(r.health, panereader.Mono()-t0)
		}
		if open > 0 {
			r.accept = append(r.accept, d)
		} else {
			r.acceptIdle++
		}
	}
	deadline := time.Now().Add(2 * time.Minute)
	for int(ev.finals()-closed0) < n {
		if time.Now().After(deadline) {
			return r, fmt.Errorf("%d of %d triggers not closed 2 min after the last was sent", n-int(ev.finals()-closed0), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	r.rate = float64(n) / time.Since(start).Seconds()
	r.load = loadavg()
	return r, nil
}

var healthReq = []byte("GET /v1/health HTTP/1.1\r\nHost: nudge\r\n\r\n")

// soakMeasure fills in the store's size and the daemon's RSS, before, during and after
// quiet. A retention pass in the quiet reads the store's pages back into the resident set
// for the 10 s until the next idle release; the lowest sample shows the released state.
func (b *bench) soakMeasure(r soakRow, quiet time.Duration) soakRow {
	pid := b.e.daemon.Process.Pid
	rss := func() float64 { return float64(status(pid, "VmRSS")) / 1024 }
	r.rssBusy = rss()
	r.rssLow = r.rssBusy
	for end := time.Now().Add(quiet); time.Now().Before(end); {
		time.Sleep(min(time.Second, time.Until(end)))
		r.rssLow = min(r.rssLow, rss())
	}
	r.rss = rss()
	r.rssLow = min(r.rssLow, r.rss)
	if m, err := b.e.get("/metrics"); err == nil {
		r.used = (gauge(string(m), "nudge_store_file_bytes") - gauge(string(m), "nudge_store_free_bytes")) / (1 << 20)
	}
	state := filepath.Join(b.e.dir, "state")
	r.store = fileMB(filepath.Join(state, "nudge.db"))
	r.creates = fileMB(filepath.Join(state, "nudge.db.creates"))
	segs, _ := filepath.Glob(filepath.Join(state, "audit", "audit-*.jsonl"))
	r.segments = len(segs)
	for _, s := range segs {
		r.archive += fileMB(s)
	}
	return r
}

// gauge reads one unlabelled gauge from a Prometheus text exposition (0 if absent).
func gauge(text, name string) float64 {
	for _, l := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			f, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f
		}
	}
	return 0
}

func fileMB(path string) float64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return float64(fi.Size()) / (1 << 20)
}

// soakVerify runs `nudge audit --verify` (and --archive) against the daemon.
func (b *bench) soakVerify(archive bool) string {
	args := []string{"audit", "--verify", "--socket", b.e.apiSock}
	if archive {
		args = append(args, "--archive")
	}
	cmd := exec.Command(b.e.nudge, args...)
	cmd.Env = append(os.Environ(), "HOME="+b.e.dir)
	out, err := cmd.CombinedOutput()
	s := strings.TrimSpace(string(out))
	if err != nil {
		s += " (" + err.Error() + ")"
	}
	return s
}

func (b *bench) soakPrint(w io.Writer, r soakRow) {
	fmt.Fprintf(w, "soak %s\n", soakLine(r))
}

func soakLine(r soakRow) string {
	acc, health, rate := "—", "—", "—"
	if len(r.accept) > 0 {
		acc = fmt.Sprintf("%.2f / %.2f / %.1f (n %d)", pct(r.accept, .5)/1e3, pct(r.accept, .99)/1e3, pct(r.accept, 1)/1e3, len(r.accept))
	}
	if len(r.health) > 0 {
		health = fmt.Sprintf("%.2f / %.2f", pct(r.health, .5)/1e3, pct(r.health, .99)/1e3)
	}
	if r.rate > 0 {
		rate = fmt.Sprintf("%.1f", r.rate)
	}
	return fmt.Sprintf("| %d | %.1f (%.1f) | %.2f | %.1f (%d) | %.1f | %.1f / %.1f | %s | %s | %s | %s |",
		r.sent, r.store, r.used, r.creates, r.archive, r.segments, r.rssBusy, r.rss, r.rssLow, acc, health, rate, r.load)
}

func (s *soakResult) print(w io.Writer, o options) {
	fmt.Fprintf(w, "Soak: %d triggers to %d panes, at most %d open at once, a row every %d; RSS after %v quiet\n\n",
		o.soakN, o.soakPanes, o.soakBacklog, o.soakEvery, o.soakQuiet)
	fmt.Fprintln(w, "| triggers | store file MB (in use) | create log MB | audit archive MB (segments) | RSS busy MB | RSS after the quiet / lowest in it MB | accept p50 / p99 / max ms (while delivering) | GET /v1/health p50 / p99 ms | delivered/s | load |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range s.rows {
		fmt.Fprintln(w, soakLine(r))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "nudge audit --verify: %s\nnudge audit --verify --archive: %s\n\n", s.verify, s.archiv)
}
