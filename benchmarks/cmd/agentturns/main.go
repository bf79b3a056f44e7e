// Command agentturns measures real agent CLIs doing full turns through nudge: a private
// tmux server and `nudge serve`, the CLI spawned as a managed runtime with a private HOME,
// pointed at a loopback model stand-in (package standin). It sends -n triggers, cycling
// through every kind of prompt (standin.Prompts: a file mention, quotes, CJK, several
// lines, 1 to 63 KiB; and 63 KiB on one line), and prints per CLI how many were
// submitted, acked (and by which signal) and replied, how many prompts the model received
// other than exactly once, and p50/p95 from each trigger's acceptance to the model's
// first call holding its envelope, to submitted, to acked and to its turn's end.
//
//	go run ./benchmarks/cmd/agentturns -agent codex,claude -n 50
//	go run ./benchmarks/cmd/agentturns -agent claude,codex -n 12 -interval 1s -reply-delay 1.5s
//
// Without -interval each trigger is waited for until acked before the next is sent; with
// it the next goes -interval after the previous was accepted, so that with replies
// slower than the interval (-reply-delay) the agent is mid-turn and queues prompts.
// Replies print the ACK_TRIGGER marker unless -marker=false (the default with
// -interval: the receipts then rest on the agent's own session record). For Codex,
// -floor messages then go through its own channel (`codex queue`) for comparison.
// NAME:keys runs NAME with its profile's channel switched off (a profile override), so
// that a prompt handed over the agent's own channel and a typed one compare in one run:
//
//	go run ./benchmarks/cmd/agentturns -agent claude,claude:keys -n 20
//
// The CLIs are found as NUDGE_TEST_<AGENT>, else .cache/npm/node_modules/.bin, else PATH.
// -record DIR saves each pane's %output stream (package streamrec) into DIR.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
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
	"syscall"
	"time"

	"github.com/nudgehq/nudge/cmd/nudge/standin"
	"github.com/nudgehq/nudge/cmd/nudge/streamrec"
	"github.com/nudgehq/nudge/controlmode"
)

func main() {
	agents := flag.String("agent", "codex,claude", "agent profiles to run, comma separated")
	n := flag.Int("n", 50, "triggers per agent")
	nudge := flag.String("nudge", "", "nudge binary (default: go build ./cmd/nudge)")
	record := flag.String("record", "", "folder to record each pane's output stream into")
	timeout := flag.Duration("turn-timeout", 3*time.Minute, "longest wait for one trigger's ack")
	ackTimeout := flag.Duration("ack-timeout", 30*time.Second, "nudge serve's --ack-timeout (a short one exercises the retries)")
	interval := flag.Duration("interval", 0, "send the next trigger this long after the previous was accepted (0: after it was acked)")
	replyDelay := flag.Duration("reply-delay", 0, "every model turn answers after this long")
	marker := flag.Bool("marker", true, "replies print each envelope's ACK_TRIGGER marker (default false with -interval)")
	floor := flag.Int("floor", 5, "codex: messages sent with `codex queue` after the triggers, the agent's own floor (0: none)")
	stories := flag.Bool("stories", false, "print every trigger's audit story (a failed or duplicated one's is always printed)")
	flag.Parse()
	markerSet := false
	flag.Visit(func(f *flag.Flag) { markerSet = markerSet || f.Name == "marker" })
	if *interval > 0 && !markerSet {
		*marker = false
	}
	dir, err := os.MkdirTemp("", "agentturns")
	if err != nil {
		fatal(err)
	}
	defer os.RemoveAll(dir)
	bin := *nudge
	if bin == "" {
		if bin, err = build(dir); err != nil {
			fatal(err)
		}
	}
	failed := false
	for _, a := range strings.Split(*agents, ",") {
		a, mode, _ := strings.Cut(a, ":")
		r := &run{agent: a, keys: mode == "keys", n: *n, nudge: bin, record: *record, timeout: *timeout, ackTimeout: *ackTimeout,
			interval: *interval, replyDelay: *replyDelay, marker: *marker, floor: *floor, stories: *stories}
		if err := r.do(filepath.Join(dir, r.label())); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", a, err)
			failed = true
		}
	}
	if failed {
		os.Exit(1)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "agentturns:", err)
	os.Exit(1)
}

// build builds ./cmd/nudge of the module this command runs in.
func build(dir string) (string, error) {
	mod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil || len(bytes.TrimSpace(mod)) == 0 {
		return "", fmt.Errorf("go env GOMOD: run from inside the nudge module, or pass -nudge: %v", err)
	}
	out := filepath.Join(dir, "nudge")
	cmd := exec.Command("go", "build", "-o", out, "./cmd/nudge")
	cmd.Dir = filepath.Dir(string(bytes.TrimSpace(mod)))
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v: %s", err, b)
	}
	return out, nil
}

// cliBinary finds the agent CLI: NUDGE_TEST_<AGENT>, the module's npm cache, PATH.
func cliBinary(agent string) (string, error) {
	if p := os.Getenv("NUDGE_TEST_" + strings.ToUpper(agent)); p != "" {
		return p, nil
	}
	if mod, err := exec.Command("go", "env", "GOMOD").Output(); err == nil && len(bytes.TrimSpace(mod)) > 0 {
		p := filepath.Join(filepath.Dir(string(bytes.TrimSpace(mod))), ".cache", "npm", "node_modules", ".bin", agent)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return exec.LookPath(agent)
}

// run is one agent's measurement.
type run struct {
	agent, nudge, record string
	n, floor             int
	timeout, ackTimeout  time.Duration
	interval, replyDelay time.Duration
	marker, stories      bool
	keys                 bool            // the profile's channel switched off: every prompt typed
	env                  []string        // the CLI's environment (HOME, its own configuration)
	span                 time.Duration   // the first trigger sent → the last one's POST answered
	answered             []time.Duration // each POST /v1/triggers → its answer
	dir, sock, tmuxSock  string
	home                 string
	http                 *http.Client
}

// trigger is the part of a receipt the run reads.
type trigger struct {
	State           string     `json:"state"`
	ErrorCode       string     `json:"error_code"`
	Closed          bool       `json:"closed"`
	AckSignal       string     `json:"ack_signal"`
	DeliveryBackend string     `json:"delivery_backend"`
	CreatedAt       time.Time  `json:"created_at"`
	SubmittedAt     *time.Time `json:"submitted_at"`
	AckedAt         *time.Time `json:"acked_at"`
	// Reply and TurnEndedAt stay empty from a daemon that does not report them.
	Reply       string     `json:"reply"`
	TurnEndedAt *time.Time `json:"turn_ended_at"`
}

func (r *run) do(dir string) error {
	setup, ok := standin.Agents[r.agent]
	if !ok {
		return fmt.Errorf("no stand-in setup for agent %q", r.agent)
	}
	cli, err := cliBinary(r.agent)
	if err != nil {
		return fmt.Errorf("%s not installed: %v", r.agent, err)
	}
	srv, err := standin.Start(setup.API, replyScript(r.replyDelay, r.marker))
	if err != nil {
		return err
	}
	defer srv.Close()
	r.dir, r.home = dir, filepath.Join(dir, "home")
	root := filepath.Join(dir, "project")
	for _, d := range []string{r.home, filepath.Join(root, "pkg")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	os.WriteFile(filepath.Join(root, "pkg", "file.go"), []byte("package pkg\n"), 0o600)
	env, err := setup.Setup(r.home, root, srv.URL)
	if err != nil {
		return err
	}
	env = append(env, "HOME="+r.home, "PATH="+filepath.Dir(cli)+string(os.PathListSeparator)+os.Getenv("PATH"))
	r.env = env
	stop, err := r.serve(root, env)
	if err != nil {
		return err
	}
	defer stop()
	rt, err := r.spawn(root)
	if err != nil {
		return err
	}
	if r.record != "" {
		rec, err := r.startRecording(rt)
		if err != nil {
			return err
		}
		defer rec.Close()
	}
	if err := r.measure(srv); err != nil {
		return err
	}
	if r.agent == "codex" && r.floor > 0 {
		return r.codexFloor(srv, cli, rt)
	}
	return nil
}

// serve starts tmux and `nudge serve`; stop ends both and every process of the HOME.
func (r *run) serve(root string, env []string) (stop func(), err error) {
	r.sock = filepath.Join(r.dir, "api.sock")
	r.tmuxSock = fmt.Sprintf("agentturns-%d-%s", os.Getpid(), strings.ReplaceAll(r.label(), ":", "-"))
	logf, err := os.Create(filepath.Join(r.dir, "daemon.log"))
	if err != nil {
		return nil, err
	}
	profiles, err := r.profileDir()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(r.nudge, "serve", "--tmux-socket", r.tmuxSock, "--tmux-config", os.DevNull, "--profile-dir", profiles,
		"--state-dir", filepath.Join(r.dir, "state"), "--socket", r.sock, "--root", root,
		"--ack-timeout", r.ackTimeout.String(), "--rate-limit", "1000000/min", "--loop-turns", "1000000", "--loop-repeats", "1000000")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = dieWithHarness()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	stop = func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		logf.Close()
		exec.Command("tmux", "-L", r.tmuxSock, "kill-server").Run()
		killHome(r.home)
	}
	r.http = &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", r.sock)
	}}}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if err := r.call("GET", "/v1/health", nil, nil); err == nil {
			return stop, nil
		}
		if time.Now().After(deadline) {
			stop()
			return nil, fmt.Errorf("the daemon did not start; see its log")
		}
	}
}

func (r *run) call(method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, "http://nudge"+path, rd)
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

type runtime struct {
	RuntimeID, PaneID, Status, Readiness string
}

func (r *run) spawn(root string) (runtime, error) {
	var rt struct {
		RuntimeID string `json:"runtime_id"`
		PaneID    string `json:"pane_id"`
		Status    string `json:"status"`
		Readiness string `json:"readiness"`
	}
	if err := r.call("POST", "/v1/runtimes", map[string]any{"workspace": "turns", "role": "dev", "agent": r.agent, "dir": root}, &rt); err != nil {
		return runtime{}, err
	}
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if err := r.call("GET", "/v1/runtimes/"+rt.RuntimeID, nil, &rt); err == nil && rt.Status == "ready" && rt.Readiness == "READY" {
			return runtime{rt.RuntimeID, rt.PaneID, rt.Status, rt.Readiness}, nil
		}
	}
	return runtime{}, fmt.Errorf("the %s runtime never became READY: %+v", r.agent, rt)
}

func (r *run) startRecording(rt runtime) (*streamrec.Recorder, error) {
	f, err := os.Create(filepath.Join(r.record, r.agent+"_agentturns.stream"))
	if err != nil {
		return nil, err
	}
	out, _ := exec.Command("tmux", "-L", r.tmuxSock, "display-message", "-p", "-t", rt.PaneID, "#{pane_width} #{pane_height}").Output()
	var cols, rows int
	fmt.Sscanf(string(out), "%d %d", &cols, &rows)
	cfg := controlmode.Config{SocketName: r.tmuxSock, Session: "agents_turns"}
	return streamrec.Record(context.Background(), cfg, rt.PaneID, streamrec.Options{Agent: r.agent, Cols: cols, Rows: rows}, f)
}

func pct(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[(len(s)-1)*p/100].Round(time.Millisecond)
}

// killHome ends every process whose HOME is home (Codex detaches an app-server
// daemon that outlives its pane), by pid.
func killHome(home string) {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if bytes.Contains(append([]byte{0}, env...), []byte("\x00HOME="+home+"\x00")) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// label is the run's name in the output: the agent, with ":keys" when its channel is off.
func (r *run) label() string {
	if r.keys {
		return r.agent + ":keys"
	}
	return r.agent
}

// profileDir is the daemon's --profile-dir: empty, or with -agent NAME:keys the module's
// own profile of NAME without its channel.
func (r *run) profileDir() (string, error) {
	dir := filepath.Join(r.dir, "profiles")
	if err := os.MkdirAll(dir, 0o700); err != nil || !r.keys {
		return dir, err
	}
	mod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil || len(bytes.TrimSpace(mod)) == 0 {
		return "", fmt.Errorf("NAME:keys reads the module's profiles: run from inside the nudge module")
	}
	b, err := os.ReadFile(filepath.Join(filepath.Dir(string(bytes.TrimSpace(mod))), "panes", "profiles", r.agent+".json"))
	if err != nil {
		return "", err
	}
	var prof map[string]any
	if err := json.Unmarshal(b, &prof); err != nil {
		return "", err
	}
	delete(prof, "channel")
	delete(prof, "channel_flag")
	delete(prof, "channel_since")
	out, _ := json.MarshalIndent(prof, "", "  ")
	return dir, os.WriteFile(filepath.Join(dir, r.agent+".json"), out, 0o600)
}
