package auth

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/store"
)

// memStore is a Store in memory.
type memStore struct {
	mu   sync.Mutex
	meta map[string][]byte
	head uint64
}

var _ Store = (*memStore)(nil)

func newMemStore() *memStore { return &memStore{meta: map[string][]byte{}} }

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

func (m *memStore) AuditHead() (uint64, string, error) { return m.head, "", nil }

// fakeRuntimes is a Runtimes of function fields.
type fakeRuntimes struct {
	live   func() []LiveRuntime
	setEnv func(ctx context.Context, ws, name, val string) error
	setOpt func(ctx context.Context, id, name, val string) error
}

var _ Runtimes = (*fakeRuntimes)(nil)

func (f *fakeRuntimes) LiveRuntimes() []LiveRuntime { return f.live() }
func (f *fakeRuntimes) SetSessionEnv(ctx context.Context, ws, name, val string) error {
	return f.setEnv(ctx, ws, name, val)
}
func (f *fakeRuntimes) SetPaneOption(ctx context.Context, id, name, val string) error {
	return f.setOpt(ctx, id, name, val)
}

func openTest(t *testing.T, cfg Config) (*Authority, *memStore) {
	t.Helper()
	if cfg.StateDir == "" {
		cfg.StateDir = t.TempDir()
	}
	db := newMemStore()
	a, err := Open(cfg, db, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	return a, db
}

func wantCode(t *testing.T, name string, err error, code nudge.Code) {
	t.Helper()
	var ne *nudge.Error
	if !errors.As(err, &ne) || ne.Code != code {
		t.Errorf("%s: got %v, want %s", name, err, code)
	}
}

func TestAuthenticate(t *testing.T) {
	a, _ := openTest(t, DefaultConfig())
	own := Peer{UID: os.Geteuid(), Known: true}
	tok, _, err := a.Issue(Caller{Subject: "uid:0"}, IssueRequest{Subject: "orch", Workspaces: []string{"w"}, Verbs: []string{VerbTrigger}, TTL: "1h"})
	if err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		peer   Peer
		header string
		code   nudge.Code
		ws     []string
	}{
		{own, "", "", nil},
		{Peer{}, "", nudge.Forbidden, nil},
		{Peer{UID: os.Geteuid() + 1, Known: true}, "", nudge.Forbidden, nil},
		{own, "Basic x", nudge.Unauthorized, nil},
		{own, "Bearer nudge1.x.y", nudge.Unauthorized, nil},
		{own, "Bearer " + tok, "", []string{"w"}},
	} {
		c, err := a.Authenticate(tc.peer, tc.header)
		if tc.code == "" {
			if err != nil || strings.Join(c.Workspaces, ",") != strings.Join(tc.ws, ",") {
				t.Errorf("#%d: got %+v %v, want workspaces %v", i, c, err, tc.ws)
			}
			continue
		}
		wantCode(t, "#"+string(rune('0'+i)), err, tc.code)
	}
}

func TestIssueRevoke(t *testing.T) {
	a, _ := openTest(t, DefaultConfig())
	admin := Caller{Subject: "uid:1"}
	scoped := Caller{Subject: "s", Workspaces: []string{"w"}, Verbs: []string{VerbAdmin}}
	if _, _, err := a.Issue(scoped, IssueRequest{Subject: "x", Workspaces: []string{"other"}, Verbs: []string{VerbRead}}); err == nil {
		t.Error("a scoped caller granted a workspace it does not hold")
	}
	_, _, err := a.Issue(admin, IssueRequest{Subject: "runtime:x", Workspaces: []string{"w"}, Verbs: []string{VerbRead}})
	wantCode(t, "reserved subject", err, nudge.BadRequest)
	tok, it, err := a.Issue(admin, IssueRequest{Subject: "orch", Workspaces: []string{"w"}, Verbs: []string{VerbRead}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Verify(tok); err != nil {
		t.Fatal(err)
	}
	if list, err := a.List(scoped); err != nil || len(list) != 1 || list[0].ID != it.ID {
		t.Fatalf("list: %v %+v", err, list)
	}
	if _, err := a.Revoke(admin, it.ID); err != nil {
		t.Fatal(err)
	}
	_, err = a.Verify(tok)
	wantCode(t, "revoked", err, nudge.Unauthorized)
	_, err = a.Revoke(admin, "nope")
	wantCode(t, "unknown", err, nudge.NotFound)
	wantCode(t, "scoped rotate", a.RotateKey(scoped), nudge.Forbidden)
	tok2, _, _ := a.Issue(admin, IssueRequest{Subject: "orch", Workspaces: []string{"w"}, Verbs: []string{VerbRead}})
	if err := a.RotateKey(admin); err != nil {
		t.Fatal(err)
	}
	_, err = a.Verify(tok2)
	wantCode(t, "rotated", err, nudge.Unauthorized)
}

// The renewal loop mints a runtime's token into its session, and Close joins it; a
// revoked runtime's token is refused and unset from its session.
func TestRuntimeRenewal(t *testing.T) {
	var clock struct {
		sync.Mutex
		t time.Time
	}
	clock.t = time.Unix(1_000_000, 0)
	now := func() time.Time { clock.Lock(); defer clock.Unlock(); return clock.t }
	advance := func(d time.Duration) { clock.Lock(); clock.t = clock.t.Add(d); clock.Unlock() }
	cfg := DefaultConfig()
	cfg.RuntimeTokenTTL, cfg.Now = 2*time.Second, now // renewal ticks every 250ms of real time
	a, _ := openTest(t, cfg)
	var mu sync.Mutex
	env := map[string]string{}
	a.Start(&fakeRuntimes{
		live: func() []LiveRuntime { return []LiveRuntime{{ID: "rt_w.r", Workspace: "w", Role: "r"}} },
		setEnv: func(_ context.Context, ws, name, val string) error {
			mu.Lock()
			defer mu.Unlock()
			env[ws+"/"+name] = val
			return nil
		},
		setOpt: func(_ context.Context, id, name, val string) error {
			mu.Lock()
			defer mu.Unlock()
			env[id+"/"+name] = val
			return nil
		},
	})
	key := "rt_w.r/" + RuntimeTokenOption // the pane's option, not the session's environment
	get := func() string { mu.Lock(); defer mu.Unlock(); return env[key] }
	defer func() {
		if v := env["w/"+RuntimeTokenVar("r")]; v != "" {
			t.Errorf("a token was put in the session environment: %q", v)
		}
	}()
	var first string
	deadline := time.Now().Add(10 * time.Second)
	for first == "" && time.Now().Before(deadline) {
		first = get()
		time.Sleep(5 * time.Millisecond)
	}
	if first == "" {
		t.Fatal("no runtime token was minted into the session")
	}
	advance(1500 * time.Millisecond) // past half its life
	for get() == first && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	tok := get()
	if tok == first {
		t.Fatal("the runtime token was not renewed")
	}
	cl, err := a.Verify(tok)
	if err != nil || cl.RuntimeID != "rt_w.r" || strings.Join(cl.Verbs, ",") != "ack,heartbeat,read" {
		t.Fatalf("renewed token: %+v %v", cl, err)
	}
	a.RevokeRuntime(context.Background(), "rt_w.r")
	a.Close()
	a.Close() // idempotent
	if _, err := a.Verify(tok); err == nil {
		t.Error("a deregistered runtime's token still works")
	}
	if v := get(); v != "" {
		t.Errorf("the pane still holds a token after revocation: %q", v)
	}
}

// A key file group or others can read is refused.
func TestKeyFileMode(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(Config{StateDir: dir}, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, keyFile), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(Config{StateDir: dir}, nil, nil); err == nil || !strings.Contains(err.Error(), "0600") {
		t.Fatalf("group-readable key: %v", err)
	}
}
