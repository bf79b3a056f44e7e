package benchmarks

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/api"
	"github.com/nudgehq/nudge/cmd/nudge/hub"
	"github.com/nudgehq/nudge/inject"
)

// TestHubFigures measures a trigger through the fleet's hub to another member beside a
// local trigger, in the same run, on real daemons (the nudge binary built here): a hub
// and members a and b on loopback, each with its own state dir, socket and tmux server.
// Each trigger is sent to b: to b's own workspace (local), or to a's (through the hub),
// alternating, one at a time; a figure is the time from the request until b's receipt
// says closed (the shell's prompt submitted), and the request's own answer. Run by hand
// (NUDGE_BENCH_HUB=1 go test -run TestHubFigures -v ./benchmarks).
func TestHubFigures(t *testing.T) {
	if os.Getenv("NUDGE_BENCH_HUB") != "1" {
		t.Skip("NUDGE_BENCH_HUB=1 runs the hub figures")
	}
	dir, err := os.MkdirTemp("", "nhb")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin, err := buildNudgeBinary(dir)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	hubAddr := freeLoopback(t)
	users := write("users", "a pw-a-0123456789\nb pw-b-0123456789\n")
	startHubDaemon(t, bin, dir, "hub", "--hub-listen", hubAddr, "--hub-users", users)
	a := startHubDaemon(t, bin, dir, "a", "--hub", "nats://"+hubAddr, "--hub-credentials", write("a.cred", "a pw-a-0123456789\n"))
	b := startHubDaemon(t, bin, dir, "b", "--hub", "nats://"+hubAddr, "--hub-credentials", write("b.cred", "b pw-b-0123456789\n"))
	ra := spawnCat(t, a, "wa", dir)
	spawnCat(t, b, "wb", dir)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var rts []nudge.Runtime
		if b.Do(context.Background(), "GET", "/v1/runtimes", nil, &rts) == nil && slices.ContainsFunc(rts, func(r nudge.Runtime) bool { return r.RuntimeID == ra }) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("b never saw a's runtime")
		}
	}
	n := 200
	lat := map[string][]float64{}
	acc := map[string][]float64{}
	for i := range 2 * n {
		kind, ws := "local", "wb"
		if i%2 == 1 {
			kind, ws = "hub", "wa"
		}
		if i < 20 {
			kind = "warm"
		}
		id := fmt.Sprintf("hb-%04d", i)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		start := time.Now()
		var tr nudge.Trigger
		if err := b.Do(ctx, "POST", "/v1/triggers", map[string]any{"trigger_id": id, "workspace": ws, "agent": "w", "prompt": "hub figure " + id}, &tr); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		accepted := time.Since(start)
		if err := b.Do(ctx, "GET", "/v1/triggers/"+id+"?wait=15s", nil, &tr); err != nil || !tr.Closed || tr.State == nudge.StateFailed {
			t.Fatalf("%s: %+v %v", id, tr, err)
		}
		closed := time.Since(start)
		cancel()
		lat[kind] = append(lat[kind], float64(closed.Microseconds())/1000)
		acc[kind] = append(acc[kind], float64(accepted.Microseconds())/1000)
	}
	for _, k := range []string{"local", "hub"} {
		slices.Sort(lat[k])
		slices.Sort(acc[k])
		t.Logf("%-5s trigger on b (%d): request → closed receipt p50 %.2f ms, p99 %.2f ms; request → answer p50 %.2f ms, p99 %.2f ms",
			k, len(lat[k]), pctMS(lat[k], 50), pctMS(lat[k], 99), pctMS(acc[k], 50), pctMS(acc[k], 99))
	}
}

func freeLoopback(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startHubDaemon runs `nudge serve` named name with its own state dir, socket and tmux
// server, and returns its API client.
func startHubDaemon(t *testing.T, bin, dir, name string, args ...string) *api.Client {
	c, _ := startHubProcess(t, bin, dir, name, args...)
	return c
}

// startHubProcess is startHubDaemon, with the process.
func startHubProcess(t *testing.T, bin, dir, name string, args ...string) (*api.Client, *exec.Cmd) {
	t.Helper()
	sock := filepath.Join(dir, name+".sock")
	tmuxSock := fmt.Sprintf("nudge-hb-%d-%s", os.Getpid(), name)
	args = append([]string{"serve", "--state-dir", filepath.Join(dir, name+"-state"), "--socket", sock, "--tmux-socket", tmuxSock,
		"--tmux-config", "/dev/null", "--root", dir, "--log-level", "warn", "--host-name", name, "--rate-limit", "100000/min"}, args...)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+filepath.Join(dir, "config"), "TMUX=")
	logf, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
		exec.Command("tmux", "-L", tmuxSock, "kill-server").Run()
	})
	c := api.NewClient(sock, "")
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if c.Do(context.Background(), "GET", "/v1/health", nil, nil) == nil {
			return c, cmd
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(filepath.Join(dir, name+".log"))
			t.Fatalf("%s did not start\n%s", name, b)
		}
	}
}

// spawnCat starts a shell runtime in ws that reads its prompts into /dev/null.
func spawnCat(t *testing.T, c *api.Client, ws, dir string) string {
	t.Helper()
	var rt nudge.Runtime
	body := map[string]any{"workspace": ws, "role": "w", "agent": "shell", "dir": dir, "argv": []string{"sh", "-c", "exec cat >/dev/null"}}
	if err := c.Do(context.Background(), "POST", "/v1/runtimes", body, &rt); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); rt.Status != nudge.StatusReady; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s never ready: %+v", ws, rt)
		}
		c.Do(context.Background(), "GET", "/v1/runtimes/"+rt.RuntimeID, nil, &rt)
	}
	return rt.RuntimeID
}

// TestHubIdleMembers measures what members cost the hub while nothing happens: the hub
// daemon's CPU and RSS with no member, then with 100 simulated members (each a real
// connection with its own identity, as a member daemon makes it: heartbeats every 2 s, its
// runtimes, its consumer; no tmux behind them). Run by hand (NUDGE_BENCH_HUB=1 go test
// -run TestHubIdleMembers -v ./benchmarks).
func TestHubIdleMembers(t *testing.T) {
	if os.Getenv("NUDGE_BENCH_HUB") != "1" {
		t.Skip("NUDGE_BENCH_HUB=1 runs the hub figures")
	}
	const members, window = 100, 30 * time.Second
	dir, err := os.MkdirTemp("", "nhi")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin, err := buildNudgeBinary(dir)
	if err != nil {
		t.Fatal(err)
	}
	var users strings.Builder
	for i := range members {
		fmt.Fprintf(&users, "m%03d pw-%03d-0123456789\n", i, i)
	}
	usersFile := filepath.Join(dir, "users")
	if err := os.WriteFile(usersFile, []byte(users.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeLoopback(t)
	_, cmd := startHubProcess(t, bin, dir, "hub", "--hub-listen", addr, "--hub-users", usersFile)
	pid := cmd.Process.Pid
	measure := func() (cpu float64, rssKB int) {
		c0, t0 := procCPU(pid), time.Now()
		time.Sleep(window)
		return float64(procCPU(pid)-c0) / clockTicks / time.Since(t0).Seconds() * 100, vmRSS(pid)
	}
	cpu0, rss0 := measure()
	for i := range members {
		cfg := hub.DefaultConfig()
		cfg.URL, cfg.HostName = "nats://"+addr, fmt.Sprintf("m%03d", i)
		cfg.Credentials = filepath.Join(dir, cfg.HostName+".cred")
		if err := os.WriteFile(cfg.Credentials, fmt.Appendf(nil, "%s pw-%03d-0123456789\n", cfg.HostName, i), 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := hub.Open(context.Background(), cfg, hub.Deps{Local: idleLocal{}, Runtimes: idleRuntimes{"w" + cfg.HostName}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
	}
	time.Sleep(5 * time.Second) // joined, claimed
	cpu1, rss1 := measure()
	t.Logf("hub daemon idle: no member %.2f %% of a core, RSS %.1f MB; %d members %.2f %% of a core, RSS %.1f MB (%.0f s windows)",
		cpu0, float64(rss0)/1024, members, cpu1, float64(rss1)/1024, window.Seconds())
}

// vmRSS is pid's resident set in kB.
func vmRSS(pid int) int {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.Fields(v)[0])
			return n
		}
	}
	return 0
}

// idleLocal is a member's pipeline that never gets a trigger.
type idleLocal struct{}

func (idleLocal) Submit(context.Context, inject.Request) (inject.Submitted, error) {
	return inject.Submitted{}, errors.New("idle")
}
func (idleLocal) Get(string) (nudge.Trigger, error) { return nudge.Trigger{}, errors.New("idle") }
func (idleLocal) Wait(context.Context, string, func(nudge.Trigger) bool) (nudge.Trigger, error) {
	return nudge.Trigger{}, errors.New("idle")
}
func (idleLocal) Ack(context.Context, string) (nudge.Trigger, error) {
	return nudge.Trigger{}, errors.New("idle")
}

// idleRuntimes is a member's one runtime, in its own workspace.
type idleRuntimes struct{ ws string }

func (r idleRuntimes) List() []nudge.Runtime {
	return []nudge.Runtime{{RuntimeID: r.ws + ".a", WorkspaceID: r.ws, Role: "a", Status: nudge.StatusReady}}
}

// TestHubFanout measures a fan-out through the hub: one prompt to each of 100 panes spread
// over 4 members (25 on the hub, a, c, and b itself), sent to b by 10 clients, until every
// receipt is closed (all followed at once); beside the same fan-out to 100 panes all on b (local), rounds
// alternating, same run. Run by hand (NUDGE_BENCH_HUB=1 go test -run TestHubFanout -v
// ./benchmarks).
func TestHubFanout(t *testing.T) {
	if os.Getenv("NUDGE_BENCH_HUB") != "1" {
		t.Skip("NUDGE_BENCH_HUB=1 runs the hub figures")
	}
	dir, err := os.MkdirTemp("", "nhf")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin, err := buildNudgeBinary(dir)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"a", "b", "c"}
	var users strings.Builder
	for _, n := range names {
		fmt.Fprintf(&users, "%s pw-%s-0123456789\n", n, n)
	}
	usersFile := filepath.Join(dir, "users")
	if err := os.WriteFile(usersFile, []byte(users.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeLoopback(t)
	clients := map[string]*api.Client{"hub": startHubDaemon(t, bin, dir, "hub", "--hub-listen", addr, "--hub-users", usersFile)}
	for _, n := range names {
		cred := filepath.Join(dir, n+".cred")
		if err := os.WriteFile(cred, fmt.Appendf(nil, "%s pw-%s-0123456789\n", n, n), 0o600); err != nil {
			t.Fatal(err)
		}
		clients[n] = startHubDaemon(t, bin, dir, n, "--hub", "nats://"+addr, "--hub-credentials", cred)
	}
	type pane struct{ ws, role string }
	spawn := func(c *api.Client, ws string, n int) []pane {
		var out []pane
		for i := range n {
			out = append(out, pane{ws, fmt.Sprintf("r%02d", i)})
		}
		for _, p := range out { // one at a time in a workspace: concurrent spawns race for a window index
			spawnRole(t, c, p.ws, p.role, dir)
		}
		return out
	}
	hosts := []string{"hub", "a", "c", "b", "b"}
	parts := make([][]pane, len(hosts))
	runParallel(len(hosts), len(hosts), func(i int) {
		if i == 4 {
			parts[i] = spawn(clients["b"], "lb", 100)
		} else {
			parts[i] = spawn(clients[hosts[i]], "f"+hosts[i], 25)
		}
	})
	fleet, local := slices.Concat(parts[:4]...), parts[4]
	b := clients["b"]
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		var rts []nudge.Runtime
		if b.Do(context.Background(), "GET", "/v1/runtimes", nil, &rts) == nil && len(rts) == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("b never listed the 200 runtimes")
		}
	}
	round := func(kind string, ps []pane, r int) float64 {
		start := time.Now()
		runParallel(10, len(ps), func(i int) {
			id := fmt.Sprintf("fo-%s-%d-%03d", kind, r, i)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			var tr nudge.Trigger
			if err := b.Do(ctx, "POST", "/v1/triggers", map[string]any{"trigger_id": id, "workspace": ps[i].ws, "agent": ps[i].role, "prompt": "fan-out " + id}, &tr); err != nil {
				t.Errorf("%s: %v", id, err)
			}
		})
		runParallel(len(ps), len(ps), func(i int) { // then every receipt, at once
			id := fmt.Sprintf("fo-%s-%d-%03d", kind, r, i)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			var tr nudge.Trigger
			if err := b.Do(ctx, "GET", "/v1/triggers/"+id+"?wait=50s", nil, &tr); err != nil || !tr.Closed || tr.State == nudge.StateFailed {
				t.Errorf("%s: %+v %v", id, tr.State, err)
			}
		})
		return float64(time.Since(start).Microseconds()) / 1000
	}
	got := map[string][]float64{}
	for r := range 6 {
		for _, k := range []string{"local", "fleet"} {
			ps := local
			if k == "fleet" {
				ps = fleet
			}
			ms := round(k, ps, r)
			if r > 0 { // the first round warms up
				got[k] = append(got[k], ms)
			}
		}
	}
	for _, k := range []string{"local", "fleet"} {
		slices.Sort(got[k])
		t.Logf("fan-out to 100 panes, %-5s: every receipt closed in %.0f ms median (rounds %v ms)", k, got[k][len(got[k])/2], got[k])
	}
}

// runParallel calls fn(0..n-1) on workers goroutines and waits.
func runParallel(workers, n int, fn func(int)) {
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				fn(i)
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// spawnRole starts a shell runtime ws/role that reads its prompts into /dev/null.
func spawnRole(t *testing.T, c *api.Client, ws, role, dir string) {
	var rt nudge.Runtime
	body := map[string]any{"workspace": ws, "role": role, "agent": "shell", "dir": dir, "argv": []string{"sh", "-c", "exec cat >/dev/null"}}
	if err := c.Do(context.Background(), "POST", "/v1/runtimes", body, &rt); err != nil {
		t.Errorf("spawn %s/%s: %v", ws, role, err)
		return
	}
	for deadline := time.Now().Add(60 * time.Second); rt.Status != nudge.StatusReady; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Errorf("%s/%s never ready", ws, role)
			return
		}
		c.Do(context.Background(), "GET", "/v1/runtimes/"+rt.RuntimeID, nil, &rt)
	}
}
