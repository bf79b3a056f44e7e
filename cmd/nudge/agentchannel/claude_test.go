package agentchannel

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/inject"
	"github.com/nudgehq/nudge/panes"
)

const envelope = "[BRIDGE_TRIGGER id=t1 thread=- reason=trigger] hello [/BRIDGE_TRIGGER]"

func claudeChannels(dir string) *Channels {
	return &Channels{Profiles: map[string]panes.Profile{"claude": {Channel: panes.ChannelClaude}}, Dir: dir}
}

// The prompt goes as one user frame with the trigger's id and a transcript id derived
// from it.
func TestClaudeDeliver(t *testing.T) {
	dir := t.TempDir()
	rt := nudge.Runtime{RuntimeID: "rt_ws.dev", Agent: "claude"}
	ln, err := net.Listen("unix", panes.ChannelSocket(dir, rt.RuntimeID))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan map[string]any, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		var m map[string]any
		line, _ := bufio.NewReader(c).ReadBytes('\n')
		json.Unmarshal(line, &m)
		got <- m
	}()
	backend, err := claudeChannels(dir).Deliver(context.Background(), rt, envelope)
	if err != nil || backend != BackendClaude {
		t.Fatalf("backend %q, err %v", backend, err)
	}
	m := <-got
	msg, _ := m["message"].(map[string]any)
	if m["type"] != "user" || m["msg_id"] != "t1" || m["uuid"] != claudeUUID("t1") || msg["content"] != envelope || msg["role"] != "user" {
		t.Fatalf("frame %v", m)
	}
}

// Another program's socket linked into the place of a session's socket, a plain file
// there, or no socket at all: nothing is sent, and the prompt is typed instead.
func TestClaudeDeliverRefusesForeignSocket(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	rt := nudge.Runtime{RuntimeID: "rt_ws.dev", Agent: "claude"}
	ch := claudeChannels(dir)
	if _, err := ch.Deliver(context.Background(), rt, envelope); !errors.Is(err, inject.ErrNoChannel) {
		t.Fatalf("no socket: %v", err)
	}
	ln, err := net.Listen("unix", filepath.Join(other, "spy.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan bool, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
			accepted <- true
		}
	}()
	place := panes.ChannelSocket(dir, rt.RuntimeID)
	os.Symlink(filepath.Join(other, "spy.sock"), place)
	if _, err := ch.Deliver(context.Background(), rt, envelope); !errors.Is(err, inject.ErrNoChannel) {
		t.Fatalf("linked socket: %v", err)
	}
	os.Remove(place)
	os.WriteFile(place, []byte("x"), 0o600)
	if _, err := ch.Deliver(context.Background(), rt, envelope); !errors.Is(err, inject.ErrNoChannel) {
		t.Fatalf("plain file: %v", err)
	}
	select {
	case <-accepted:
		t.Fatal("the linked socket was dialled")
	default:
	}
}

// A directory made in advance where the channel directory goes, open to others or a
// link, is refused, not used.
func TestDirRefusesPremade(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	state := t.TempDir()
	d, err := Dir(state)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("%s: %v %v", d, fi.Mode(), err)
	}
	base := filepath.Dir(d)
	os.Chmod(base, 0o777)
	if _, err := Dir(state); err == nil {
		t.Error("a base directory open to others was used")
	}
	os.Chmod(base, 0o700)
	os.RemoveAll(base)
	os.Symlink(t.TempDir(), base)
	if _, err := Dir(state); err == nil {
		t.Error("a linked base directory was used")
	}
}
