package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nudgehq/nudge/benchmarks/internal/panereader"
)

// env is one benchmark run's world: a private tmux server, a nudge daemon on it, the
// pane readers' listener and the API client. close tears all of it down.
type env struct {
	dir        string
	tmux       string // the real tmux binary
	tmuxSock   string // tmux -L name
	tmuxLog    string // one line per tmux process the daemon started (the wrapper's log)
	apiSock    string
	nudge      string
	daemon     *exec.Cmd
	daemonLog  string
	self       string // this binary, run in panes as the reader
	readers    *panereader.Listener
	readerSock string
	http       *http.Client
	events     *eventStream
	serveArgs  []string
}

const workspace = "bench"

// profiles the daemon loads from --profile-dir: "bench" (submitted counts as the ack, so
// a pane's lane is free once Enter is confirmed) and "benchack" (the pane must print
// ACK_TRIGGER:<id>). Both use the shell readiness pack and allow any launcher.
var profiles = map[string]string{
	"bench":    `{"name":"bench","launch":["sh"],"allowed_launchers":["*"],"pack":"shell","submit_settle":"0s","queues_input":true,"ack_signals":["marker","api"],"submitted_is_ack":true,"ready_quiet":"300ms"}`,
	"benchack": `{"name":"benchack","launch":["sh"],"allowed_launchers":["*"],"pack":"shell","submit_settle":"0s","queues_input":true,"ack_signals":["marker","api"],"submitted_is_ack":false,"ready_quiet":"300ms"}`,
}

func init() {
	// The fleet phase's profiles: each agent's readiness pack, a pane program of any name.
	for _, a := range fleetAgents {
		profiles["fleet"+a] = fmt.Sprintf(`{"name":"fleet%s","launch":["sh"],"allowed_launchers":["*"],"pack":%q,"submit_settle":"0s","queues_input":true,"ack_signals":["marker","api"],"ready_quiet":"300ms"}`, a, a)
	}
}

func newEnv(o options) (e *env, err error) {
	e = &env{tmux: o.tmux, tmuxSock: fmt.Sprintf("nudgebench-%d", os.Getpid())}
	if e.dir, err = os.MkdirTemp("", "nb"); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			e.close()
		}
	}()
	if e.tmux, err = exec.LookPath(o.tmux); err != nil {
		return nil, err
	}
	if e.self, err = os.Executable(); err != nil {
		return nil, err
	}
	if e.nudge = o.nudge; e.nudge == "" {
		if e.nudge, err = buildNudge(e.dir); err != nil {
			return nil, err
		}
	}
	if err = e.writeFiles(); err != nil {
		return nil, err
	}
	e.readerSock = filepath.Join(e.dir, "r.sock")
	if e.readers, err = panereader.Listen(e.readerSock); err != nil {
		return nil, err
	}
	if err = e.startTmux(o.width); err != nil {
		return nil, err
	}
	if err = e.startDaemon(o); err != nil {
		return nil, err
	}
	return e, nil
}

// buildNudge builds ./cmd/nudge of the module this harness is run from.
func buildNudge(dir string) (string, error) {
	out := filepath.Join(dir, "nudge")
	mod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil || strings.TrimSpace(string(mod)) == "" || strings.TrimSpace(string(mod)) == os.DevNull {
		return "", fmt.Errorf("go env GOMOD: run nudgebench from inside the nudge module, or pass -nudge: %v", err)
	}
	cmd := exec.Command("go", "build", "-o", out, "./cmd/nudge")
	cmd.Dir = filepath.Dir(strings.TrimSpace(string(mod)))
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/nudge: %v: %s", err, b)
	}
	return out, nil
}

// writeFiles writes the profiles and the tmux wrapper that logs every tmux process the
// daemon starts (its forks) before exec'ing the real tmux.
func (e *env) writeFiles() error {
	pd := filepath.Join(e.dir, "profiles")
	if err := os.MkdirAll(pd, 0o755); err != nil {
		return err
	}
	for name, body := range profiles {
		if err := os.WriteFile(filepath.Join(pd, name+".json"), []byte(body), 0o644); err != nil {
			return err
		}
	}
	e.tmuxLog = filepath.Join(e.dir, "tmux-forks.log")
	wrap := fmt.Sprintf("#!/bin/sh\nprintf '%%s\\n' \"$*\" >> '%s'\nexec '%s' \"$@\"\n", e.tmuxLog, e.tmux)
	return os.WriteFile(filepath.Join(e.dir, "tmuxwrap"), []byte(wrap), 0o755)
}

// startTmux starts the private tmux server before the daemon, with a holder session and
// default-size WIDTHx50, so nudge's sessions get windows that wide. The default (80
// columns) wraps the ~280-byte envelope over several rows.
func (e *env) startTmux(width int) error {
	base := []string{"-L", e.tmuxSock, "-f", os.DevNull}
	size := fmt.Sprintf("%dx50", width)
	for _, args := range [][]string{
		{"new-session", "-d", "-s", "nbhold", "-x", strconv.Itoa(width), "-y", "50", "sleep", "1000000"},
		{"set-option", "-g", "default-size", size},
	} {
		if out, err := exec.Command(e.tmux, append(base, args...)...).CombinedOutput(); err != nil {
			return fmt.Errorf("tmux %s: %v: %s", args[0], err, out)
		}
	}
	return nil
}

func (e *env) startDaemon(o options) error {
	e.apiSock = filepath.Join(e.dir, "api.sock")
	e.daemonLog = filepath.Join(e.dir, "daemon.log")
	e.serveArgs = []string{"serve",
		"--tmux", filepath.Join(e.dir, "tmuxwrap"),
		"--tmux-socket", e.tmuxSock, "--tmux-config", os.DevNull,
		"--state-dir", filepath.Join(e.dir, "state"), "--socket", e.apiSock,
		"--root", e.dir, "--profile-dir", filepath.Join(e.dir, "profiles"),
		"--rate-limit", "1000000/min", "--loop-turns", "1000000", "--loop-repeats", "1000000",
		"--submit-quiet", o.submitQuiet.String(), "--echo-timeout", o.echoTimeout.String(),
		"--submit-timeout", o.submitTimeout.String(),
	}
	if o.cpuprofile != "" {
		e.serveArgs = append(e.serveArgs, "--cpuprofile", o.cpuprofile)
	}
	if o.profileWindows != "" {
		e.serveArgs = append(e.serveArgs, "--profile-windows", o.profileWindows)
	}
	if o.trace != "" {
		e.serveArgs = append(e.serveArgs, "--trace", o.trace)
	}
	if o.sshConfig != "" {
		e.serveArgs = append(e.serveArgs, "--ssh-config", o.sshConfig)
	}
	e.serveArgs = append(e.serveArgs, strings.Fields(o.serveArgs)...)
	logf, err := os.Create(e.daemonLog)
	if err != nil {
		return err
	}
	defer logf.Close()
	e.daemon = exec.Command(e.nudge, e.serveArgs...)
	e.daemon.Stdout, e.daemon.Stderr = logf, logf
	e.daemon.Env = append(os.Environ(), "HOME="+e.dir)
	if o.daemonProcs > 0 {
		e.daemon.Env = append(e.daemon.Env, "GOMAXPROCS="+strconv.Itoa(o.daemonProcs))
	}
	e.daemon.SysProcAttr = dieWithHarness() // never outlive the harness
	if err := e.daemon.Start(); err != nil {
		return err
	}
	e.http = &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", e.apiSock)
		},
		MaxIdleConnsPerHost: 4,
	}}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := e.get("/v1/health"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("daemon did not answer /v1/health in 20s; log: %s", e.tail())
		}
		time.Sleep(50 * time.Millisecond)
	}
	var err2 error
	e.events, err2 = openEvents(e)
	return err2
}

// tail returns the end of the daemon's log.
func (e *env) tail() string {
	b, _ := os.ReadFile(e.daemonLog)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

func (e *env) close() {
	if e.events != nil {
		e.events.close()
	}
	if e.daemon != nil && e.daemon.Process != nil {
		e.daemon.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { e.daemon.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			e.daemon.Process.Kill()
			<-done
		}
	}
	if e.readers != nil {
		e.readers.Close()
	}
	if e.tmux != "" {
		exec.Command(e.tmux, "-L", e.tmuxSock, "kill-server").Run()
	}
	if e.dir != "" && os.Getenv("NUDGEBENCH_KEEP") == "" {
		os.RemoveAll(e.dir)
	} else if e.dir != "" {
		fmt.Fprintln(os.Stderr, "nudgebench: kept", e.dir)
	}
}

func (e *env) get(path string) ([]byte, error) {
	resp, err := e.http.Get("http://nudge" + path)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		return b, fmt.Errorf("GET %s: %s: %s", path, resp.Status, b)
	}
	return b, err
}

func (e *env) post(path string, body any) ([]byte, error) {
	js, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	resp, err := e.http.Post("http://nudge"+path, "application/json", bytes.NewReader(js))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		return b, fmt.Errorf("POST %s: %s: %s", path, resp.Status, b)
	}
	return b, err
}

func (e *env) del(path string) error {
	req, err := http.NewRequest(http.MethodDelete, "http://nudge"+path, nil)
	if err != nil {
		return err
	}
	resp, err := e.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		return fmt.Errorf("DELETE %s: %s: %s", path, resp.Status, b)
	}
	return nil
}

// rtRecord is the part of a runtime record the harness uses.
type rtRecord struct {
	RuntimeID string `json:"runtime_id"`
	Role      string `json:"role"`
	PaneID    string `json:"pane_id"`
	Status    string `json:"status"`
	Readiness string `json:"readiness"`
	PID       int    `json:"pid"`
}

// bpane is one managed pane: its runtime and its reader.
type bpane struct {
	rt        rtRecord
	r         *panereader.Pane
	streaming bool
	last      string // id of the latest nudge trigger sent to it
	ws        string // its workspace; "" means workspace
}

func (p *bpane) workspace() string {
	if p.ws != "" {
		return p.ws
	}
	return workspace
}

// spawn starts a managed runtime running the reader in the benchmark's local workspace,
// waits for the reader and for the runtime to be ready.
func (e *env) spawn(role, agent string) (*bpane, error) {
	p, err := e.spawnOn(workspace, role, agent, "")
	if p != nil {
		p.ws = ""
	}
	return p, err
}

// event is one /v1/events line with the harness's CLOCK_MONOTONIC stamp of its arrival.
type event struct {
	Type    string          `json:"type"`
	Runtime json.RawMessage `json:"runtime"`
	Trigger json.RawMessage `json:"trigger"`
	Detail  json.RawMessage `json:"detail"`
	mono    int64
	rt      rtRecord
	tr      struct {
		TriggerID string `json:"trigger_id"`
		State     string `json:"state"`
		Closed    bool   `json:"closed"`
		RuntimeID string `json:"runtime_id"`
	}
	rd struct {
		RuntimeID    string `json:"runtime_id"`
		Readiness    string `json:"readiness"`
		OperatorBusy bool   `json:"operator_busy"`
	}
}

// eventStream reads /v1/events and hands each event to the registered waiters.
type eventStream struct {
	body    io.Closer
	mu      sync.Mutex
	waiters map[*waiter]struct{}
	final   map[string]chan struct{} // trigger id → closed when it is closed
	counts  map[string]int64         // events seen, by type
	closed  int64                    // triggers registered with expectFinal and closed since
}

type waiter struct {
	match func(*event) bool
	ch    chan *event
}

func openEvents(e *env) (*eventStream, error) {
	resp, err := e.http.Get("http://nudge/v1/events")
	if err != nil {
		return nil, err
	}
	s := &eventStream{body: resp.Body, waiters: map[*waiter]struct{}{}, final: map[string]chan struct{}{}, counts: map[string]int64{}}
	go s.read(resp.Body)
	return s, nil
}

func (s *eventStream) close() { s.body.Close() }

func (s *eventStream) read(r io.Reader) {
	br := bufio.NewReaderSize(r, 1<<20)
	for {
		line, err := br.ReadBytes('\n')
		ts := panereader.Mono()
		if err != nil {
			return
		}
		ev := &event{mono: ts}
		if json.Unmarshal(line, ev) != nil {
			continue
		}
		switch ev.Type {
		case "runtime":
			json.Unmarshal(ev.Runtime, &ev.rt)
		case "trigger":
			json.Unmarshal(ev.Trigger, &ev.tr)
		case "readiness":
			json.Unmarshal(ev.Detail, &ev.rd)
		}
		s.dispatch(ev)
	}
}

func (s *eventStream) dispatch(ev *event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts[ev.Type]++
	if ev.Type == "readiness" {
		s.counts["readiness "+ev.rd.Readiness]++
	}
	if ev.Type == "trigger" && ev.tr.Closed {
		if ch, ok := s.final[ev.tr.TriggerID]; ok {
			close(ch)
			delete(s.final, ev.tr.TriggerID)
			s.closed++
		}
	}
	for w := range s.waiters {
		if w.match(ev) {
			select {
			case w.ch <- ev:
			default:
			}
		}
	}
}

// count returns how many events of each type have arrived.
func (s *eventStream) count() map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.counts)
}

// finals is how many triggers registered with expectFinal have been closed.
func (s *eventStream) finals() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// expectFinal registers a trigger id before it is sent; the channel closes when the
// trigger's record is closed.
func (s *eventStream) expectFinal(id string) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := make(chan struct{})
	s.final[id] = ch
	return ch
}

// watch registers a waiter; call cancel when done.
func (s *eventStream) watch(match func(*event) bool) (<-chan *event, func()) {
	w := &waiter{match: match, ch: make(chan *event, 1024)}
	s.mu.Lock()
	s.waiters[w] = struct{}{}
	s.mu.Unlock()
	return w.ch, func() {
		s.mu.Lock()
		delete(s.waiters, w)
		s.mu.Unlock()
	}
}
