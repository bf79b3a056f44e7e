package controlmode

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// sleeper starts a child that runs until signalled and returns a channel with how it
// ended.
func sleeper(t *testing.T) (*exec.Cmd, chan syscall.Signal) {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ended := make(chan syscall.Signal, 1)
	go func() {
		err := cmd.Wait()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			ended <- ee.Sys().(syscall.WaitStatus).Signal()
			return
		}
		ended <- 0
	}()
	return cmd, ended
}

// The watch macOS uses, run here: once nudge's end of the pipe is closed (what the
// kernel does when nudge dies), the watched child gets SIGTERM.
func TestPipeWatchEndsChildWhenParentGoes(t *testing.T) {
	cmd, ended := sleeper(t)
	w := startPipeWatch(cmd.Process.Pid)
	if w == nil {
		_ = cmd.Process.Kill()
		t.Fatal("the watch did not start")
	}
	w.w.Close()
	if sig := <-ended; sig != syscall.SIGTERM {
		t.Fatalf("the child ended by signal %v, want SIGTERM", sig)
	}
	if err := w.sh.Wait(); err != nil {
		t.Fatalf("the watch: %v", err)
	}
}

// A watch stopped while nudge lives (the child ended or was closed) signals nothing.
func TestPipeWatchStopLeavesChild(t *testing.T) {
	cmd, ended := sleeper(t)
	pipeWatch{}.prepare(cmd)
	pipeWatch{}.watch(cmd)() // started and stopped
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("the child is gone after the watch stopped: %v", err)
	}
	if sig := <-ended; sig != syscall.SIGKILL {
		t.Fatalf("the child ended by signal %v, want the test's SIGKILL", sig)
	}
}

// End to end on a real tmux server, with the watch macOS uses and with this OS's: the
// process that dialed is killed with SIGKILL while something else still holds the
// client's stdin (so no EOF reaches the client, as in tmux 3.3a's missed-EOF case), and
// the watch ends the client: it leaves the server's client list.
func TestPipeWatchEndsClientWhenDaemonKilled(t *testing.T) {
	for _, kind := range []string{"pipe", "host"} {
		t.Run(kind, func(t *testing.T) { testWatchEndsClient(t, kind) })
	}
}

func testWatchEndsClient(t *testing.T, kind string) {
	srv := newServer(t, "sleep", "600")
	helper := exec.Command(os.Args[0], "-test.run=^TestPipeWatchHelper$")
	helper.Env = append(os.Environ(), "NUDGE_PIPEWATCH_SERVER="+srv.name, "NUDGE_PIPEWATCH_KIND="+kind)
	out, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = helper.Process.Kill(); _ = helper.Wait() })
	var client, holder int
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if n, _ := fmt.Sscanf(sc.Text(), "client %d holder %d", &client, &holder); n == 2 {
			break
		}
	}
	if client == 0 {
		t.Fatal("the helper did not dial")
	}
	t.Cleanup(func() { _ = syscall.Kill(holder, syscall.SIGKILL) }) // our sleep, by pid
	name := "client-" + strconv.Itoa(client)
	if !strings.Contains(srv.run("list-clients", "-F", "#{client_name}"), name) {
		t.Fatalf("%s is not attached", name)
	}
	_ = helper.Process.Kill()
	_ = helper.Wait()
	waitFor(t, func() bool { return !strings.Contains(srv.run("list-clients", "-F", "#{client_name}"), name) })
}

// TestPipeWatchHelper is the dialing process of the test above (run only by it).
func TestPipeWatchHelper(t *testing.T) {
	server := os.Getenv("NUDGE_PIPEWATCH_SERVER")
	if server == "" {
		t.Skip("run by TestPipeWatchEndsClientWhenDaemonKilled")
	}
	if os.Getenv("NUDGE_PIPEWATCH_KIND") == "pipe" {
		hostWatch = pipeWatch{} // this process only
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := Dial(ctx, Config{SocketName: server, ConfigFile: "/dev/null", Session: "s"})
	if err != nil {
		t.Fatal(err)
	}
	holder := exec.Command("sleep", "600")
	holder.ExtraFiles = []*os.File{c.stdin.(*os.File)} // the client's stdin stays open
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("client %d holder %d\n", c.cmd.Process.Pid, holder.Process.Pid)
	select {} // until killed
}
