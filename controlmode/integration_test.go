package controlmode

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
)

func TestDialRunCommandsSeeOutput(t *testing.T) {
	checkGoroutines(t)
	srv := newServer(t, "cat")
	var col collector
	c := dial(t, col.attach(srv.config()))

	if want := "client-" + strconv.Itoa(c.cmd.Process.Pid); c.ClientName() != want {
		t.Errorf("ClientName: got %q, want %q", c.ClientName(), want)
	}
	if s := c.Session(); s.Name != "s" {
		t.Errorf("Session: got %+v", s)
	}
	// The shell tmux starts the pane with execs cat shortly.
	waitFor(t, func() bool {
		got := do(t, c, "list-panes -F '%#{pane_index} #{pane_current_command}'")
		return len(got) == 1 && got[0] == "%0 cat"
	})
	_, err := c.Do(context.Background(), "no-such-command")
	var ce *CommandError
	if !errors.As(err, &ce) || !strings.Contains(ce.Error(), "unknown command") {
		t.Errorf("bad command: got %v, want *CommandError", err)
	}
	pane := do(t, c, "display -p '#{pane_id}'")[0]
	if _, err := c.DoAll(context.Background(), SendKeys(pane, "hello control mode\r")...); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return strings.Count(col.paneOutput(0), "hello control mode") >= 2 })
	if st := c.Stats(); st.OutputLines == 0 || st.OutputBytes == 0 || st.Commands < 4 {
		t.Errorf("stats: got %+v", st)
	}
}

func TestDialCreateSession(t *testing.T) {
	checkGoroutines(t)
	srv := newServer(t, "sleep", "600")
	cfg := srv.config()
	cfg.Session = "created"
	cfg.CreateSession = true
	cfg.NewSessionArgs = []string{"-n", "it's a 'win'", "sleep 600"}
	c := dial(t, cfg)
	if got := do(t, c, "display -p '#{session_name}|#{window_name}'"); got[0] != "created|it's a 'win'" {
		t.Errorf("got %q", got)
	}
	// A second Dial finds the session and does not create another.
	dial(t, cfg)
	if got := srv.run("list-sessions", "-F", "#{session_name}"); got != "created\ns" {
		t.Errorf("sessions: got %q", got)
	}
}

func TestDialStartsServerWithCreateSession(t *testing.T) {
	checkGoroutines(t)
	probe := newServer(t, "sleep", "600") // for the socket directory
	srv := &tmuxServer{t: t, name: probe.name + "-fresh", sockDir: probe.sockDir}
	srv.removeSocket(srv.name)
	t.Cleanup(func() { exec.Command("tmux", "-L", srv.name, "kill-server").Run() })
	cfg := srv.config()
	cfg.CreateSession = true
	cfg.NewSessionArgs = []string{"sleep 600"}
	c := dial(t, cfg)
	if got := do(t, c, "display -p '#{session_name}'"); got[0] != "s" {
		t.Errorf("got %q", got)
	}
}

func TestDialErrors(t *testing.T) {
	checkGoroutines(t)
	srv := newServer(t, "sleep", "600")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	t.Run("ErrNoSession", func(t *testing.T) {
		cfg := srv.config()
		cfg.Session = "nosuch"
		_, err := Dial(ctx, cfg)
		if !errors.Is(err, ErrNoSession) || !strings.Contains(err.Error(), "can't find session") {
			t.Errorf("got %v, want ErrNoSession", err)
		}
	})
	t.Run("ErrNoSessionNoServer", func(t *testing.T) {
		cfg := srv.config()
		cfg.SocketName += "-absent"
		srv.removeSocket(cfg.SocketName)
		t.Cleanup(func() { exec.Command("tmux", "-L", cfg.SocketName, "kill-server").Run() })
		_, err := Dial(ctx, cfg)
		if !errors.Is(err, ErrNoSession) {
			t.Errorf("got %v, want ErrNoSession", err)
		}
	})
	t.Run("ErrNoBinary", func(t *testing.T) {
		cfg := srv.config()
		cfg.Tmux = "nudge-no-such-tmux"
		_, err := Dial(ctx, cfg)
		if !errors.Is(err, exec.ErrNotFound) || !strings.Contains(err.Error(), "nudge-no-such-tmux") {
			t.Errorf("got %v, want exec.ErrNotFound", err)
		}
	})
	t.Run("ErrTmuxExitsAtStart", func(t *testing.T) {
		cfg := srv.config()
		cfg.Tmux = writeScript(t, "echo 'tmux: something broke' >&2; exit 3")
		_, err := Dial(ctx, cfg)
		if err == nil || !strings.Contains(err.Error(), "something broke") {
			t.Errorf("got %v, want an error with tmux's stderr", err)
		}
	})
	t.Run("ErrContext", func(t *testing.T) {
		cfg := srv.config()
		cfg.Tmux = writeScript(t, "exec sleep 600") // never attaches
		short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		if _, err := Dial(short, cfg); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("got %v, want context.DeadlineExceeded", err)
		}
	})
	t.Run("ErrConfig", func(t *testing.T) {
		if _, err := Dial(ctx, Config{}); err == nil {
			t.Error("Dial with no session: got nil error")
		}
	})
}

// writeScript writes an executable sh script and returns its path.
func writeScript(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestKillServerMidCommand(t *testing.T) {
	checkGoroutines(t)
	srv := newServer(t, "sleep", "600")
	c := dial(t, srv.config())
	// run-shell waits: the next command queues behind it until the server dies.
	do(t, c, "run-shell 'sleep 30'")
	stuck := c.Go("display -p after")
	srv.run("kill-server")
	select {
	case <-c.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("Done not closed after the server died")
	}
	<-stuck.Done
	if stuck.Err == nil || !errors.Is(stuck.Err, c.Err()) && stuck.Err != c.Err() {
		t.Errorf("pending command: got %v, want the connection error %v", stuck.Err, c.Err())
	}
	var ee *ExitError
	if !errors.As(c.Err(), &ee) {
		t.Errorf("Err: got %v, want *ExitError", c.Err())
	}
	if _, err := c.Do(context.Background(), "display -p x"); err == nil {
		t.Error("Do after death: got nil error")
	}
}

func TestServerKilledWithSIGKILL(t *testing.T) {
	checkGoroutines(t)
	srv := newServer(t, "sleep", "600")
	c := dial(t, srv.config())
	pid, err := strconv.Atoi(do(t, c, "display -p '#{pid}'")[0])
	if err != nil {
		t.Fatal(err)
	}
	do(t, c, "run-shell 'sleep 30'")
	stuck := c.Go("display -p after")
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil { // our private server, by pid
		t.Fatal(err)
	}
	select {
	case <-c.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("Done not closed after the server was killed")
	}
	<-stuck.Done
	if stuck.Err == nil || c.Err() == nil {
		t.Fatalf("pending: %v, Err: %v", stuck.Err, c.Err())
	}
	t.Logf("Err after SIGKILL of the server: %v", c.Err())
}

func TestCloseLeavesNoProcessAndKeepsHumanClient(t *testing.T) {
	checkGoroutines(t)
	srv := newServer(t, "sleep", "600")

	// A human-like client on a pty.
	human := exec.Command("tmux", "-L", srv.name, "attach", "-t", "s")
	human.Env = append(ChildEnv(os.Environ()), "TERM=xterm")
	ptmx, err := pty.StartWithSize(human, &pty.Winsize{Rows: 30, Cols: 100})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		buf := make([]byte, 4096)
		for {
			if _, err := ptmx.Read(buf); err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		human.Process.Kill()
		human.Wait()
		ptmx.Close()
	})
	waitFor(t, func() bool { return srv.run("list-clients", "-F", "#{client_name}") != "" })

	c := dial(t, srv.config())
	pid := c.cmd.Process.Pid
	clients := srv.run("list-clients", "-F", "#{client_name}")
	if !strings.Contains(clients, c.ClientName()) || !strings.Contains(clients, "/dev/pts/") {
		t.Fatalf("clients before Close: %q", clients)
	}
	if got := srv.run("display", "-p", "-t", "s", "#{window_width}x#{window_height}"); got != "100x29" {
		t.Errorf("window size with our client attached: got %q, want the human's 100x29", got)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(c.Err(), ErrClosed) {
		t.Errorf("Err after Close: got %v, want ErrClosed", c.Err())
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("tmux -C process %d still exists after Close (kill 0: %v)", pid, err)
	}
	clients = srv.run("list-clients", "-F", "#{client_name}")
	if strings.Contains(clients, c.ClientName()) || !strings.Contains(clients, "/dev/pts/") {
		t.Errorf("clients after Close: got %q, want only the human", clients)
	}
	if _, err := c.Do(context.Background(), "display -p x"); !errors.Is(err, ErrClosed) {
		t.Errorf("Do after Close: got %v, want ErrClosed", err)
	}
}

func TestKeepReconnects(t *testing.T) {
	checkGoroutines(t)
	srv := newServer(t, "sleep", "600")
	ctx, cancel := context.WithCancel(context.Background())
	conns := make(chan *Conn, 10)
	kept := make(chan error, 1)
	go func() { kept <- Keep(ctx, srv.config(), func(c *Conn) { conns <- c }) }()
	next := func() *Conn {
		select {
		case c := <-conns:
			return c
		case <-time.After(30 * time.Second):
			t.Fatal("Keep did not deliver a connection")
		}
		return nil
	}
	first := next()
	do(t, first, "display -p one")
	srv.run("kill-server")
	<-first.Done()
	// Keep retries with backoff while the server is gone; bring it back (the old server
	// may still be exiting: retry).
	waitFor(t, func() bool {
		return exec.Command("tmux", "-L", srv.name, "-f", "/dev/null", "new-session", "-d", "-s", "s",
			"sleep", "600").Run() == nil
	})
	second := next()
	if got := do(t, second, "display -p two"); got[0] != "two" {
		t.Errorf("got %q", got)
	}
	cancel()
	select {
	case err := <-kept:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Keep: got %v, want context.Canceled", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Keep did not return after cancel")
	}
	select {
	case <-second.Done():
	default:
		t.Error("Keep returned without closing its connection")
	}
}

func TestSSHTransport(t *testing.T) {
	checkGoroutines(t)
	srv := newServer(t, "sleep", "600")
	// A stand-in for ssh: drops the options and host and runs the command locally
	// through a shell, as sshd would on the remote host.
	fakeSSH := writeScript(t, `while [ $# -gt 0 ]; do case "$1" in -T) shift;; --) shift; break;; *) break;; esac; done
shift # the host
exec sh -c "$*"`)
	cfg := srv.config()
	cfg.SSHHost = "box.example"
	cfg.SSH = fakeSSH
	cfg.Session = "remote"
	cfg.CreateSession = true
	cfg.NewSessionArgs = []string{"-n", "a 'quoted' $HOME;name", "sleep 600"}
	c := dial(t, cfg)
	// tmux 3.4 shows a $ in a window name as \$ (it is stored so): not ssh's doing.
	if got := do(t, c, "display -p '#{window_name}'"); strings.ReplaceAll(got[0], `\$`, "$") != "a 'quoted' $HOME;name" {
		t.Errorf("window name through ssh quoting: got %q", got)
	}
	if !strings.HasPrefix(c.ClientName(), "client-") {
		t.Errorf("ClientName: got %q", c.ClientName())
	}
}

func TestSubscribe(t *testing.T) {
	checkGoroutines(t)
	srv := newServer(t, "sleep", "600")
	var col collector
	c := dial(t, col.attach(srv.config()))
	ctx := context.Background()
	if err := c.Subscribe(ctx, "dead", "%*", "#{pane_id}:#{pane_dead}:#{pane_current_command}"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		return col.find(func(ev Event) bool {
			s, ok := ev.(*SubscriptionChanged)
			return ok && s.Name == "dead" && s.Pane == 0 && s.Value == "%0:0:sleep"
		})
	})
	if err := c.Unsubscribe(ctx, "dead"); err != nil {
		t.Fatal(err)
	}
	if err := c.Subscribe(ctx, "a:b", "", "x"); err == nil {
		t.Error("Subscribe with ':' in the name: got nil error")
	}
}

func TestPauseIsContinued(t *testing.T) {
	checkGoroutines(t)
	srv := newServer(t, "cat")
	var col collector
	c := dial(t, col.attach(srv.config()))
	do(t, c, "refresh-client -A '%0:pause'")
	waitFor(t, func() bool {
		return col.find(func(ev Event) bool { _, ok := ev.(*Continue); return ok })
	})
	if !col.find(func(ev Event) bool { p, ok := ev.(*Pause); return ok && p.Pane == 0 }) {
		t.Error("no *Pause event")
	}
	if st := c.Stats(); st.Pauses != 1 {
		t.Errorf("Pauses = %d, want 1", st.Pauses)
	}
	// Output flows again after the automatic continue.
	do(t, c, "send-keys -t %0 -l -- 'after-pause'")
	waitFor(t, func() bool { return strings.Contains(col.paneOutput(0), "after-pause") })
}

// TestConcurrentCommandsGetTheirOwnReplies: many goroutines sending at once through one
// connection (their lines combined into shared writes) each get the reply to their own
// command, long lines included.
func TestConcurrentCommandsGetTheirOwnReplies(t *testing.T) {
	srv := newServer(t, "cat")
	c := dial(t, srv.config())
	pad := strings.Repeat("x", 3000)
	var wg sync.WaitGroup
	errs := make(chan error, 32*20)
	for g := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				want := fmt.Sprintf("g%d-%d-%s", g, i, pad[:(g*97+i*31)%len(pad)])
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				r, err := c.Do(ctx, "display -p "+want)
				cancel()
				if err != nil || len(r.Lines) != 1 || r.Lines[0] != want {
					errs <- fmt.Errorf("g%d #%d: %v %v", g, i, err, r)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
