// Package native hands a prompt to an agent CLI through the CLI's own channel instead of
// its keyboard: nothing is typed into the pane, so a human's draft in the composer is
// never touched, and the CLI queues the prompt itself when it is busy.
//
// [Codex] is Codex's app-server control socket (the channel `codex queue` uses): a
// WebSocket on a unix socket in CODEX_HOME, JSON-RPC over it. Each [Codex.Queue] and
// [Codex.Withdraw] is one connection, closed before it returns; the package keeps no
// goroutine.
package native

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/coder/websocket"
)

// Errors callers branch on.
var (
	// ErrUnavailable: the channel is not there (no socket: the CLI runs without its
	// app-server, or an older release); the caller types the prompt instead.
	ErrUnavailable = errors.New("native: channel unavailable")
	// ErrRefused: the CLI answered the request with an error; nothing was queued.
	ErrRefused = errors.New("native: refused by the agent")
	// ErrNotThisThread: the thread named is not the runtime's (it works in another
	// directory: another workspace's session of the shared app-server); nothing was sent.
	// It wraps ErrRefused.
	ErrNotThisThread = fmt.Errorf("%w: the thread is not this runtime's", ErrRefused)
)

// Codex is the app-server control channel of the Codex CLIs whose home is Home
// (CODEX_HOME, default ~/.codex).
type Codex struct {
	Home    string
	Version string // nudge's version, in the client info the server logs
}

// Socket is the control socket's path.
func (c Codex) Socket() string {
	return filepath.Join(c.Home, "app-server-control", "app-server-control.sock")
}

// Queue adds text to the queue of the session (thread) threadID, as a user message the
// CLI takes when its current turn (if any) ends, and returns the id the CLI gave the
// queued submission. The app-server is shared by every Codex of its home, each thread
// another runtime's: the thread must be one working in cwd (the runtime's directory),
// else nothing is queued (ErrNotThisThread). ErrUnavailable when the socket is missing,
// is not a socket owned by this user, or does not answer the handshake; ErrRefused
// (wrapped, with the CLI's message) when the CLI refuses, e.g. an unknown thread.
func (c Codex) Queue(ctx context.Context, threadID, cwd, text string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	rpc, err := c.open(ctx)
	if err != nil {
		return "", err
	}
	defer rpc.close()
	if err := rpc.threadIn(ctx, threadID, cwd); err != nil {
		return "", err
	}
	params := map[string]any{
		"threadId":                   threadID,
		"input":                      []any{map[string]any{"type": "text", "text": text, "text_elements": []any{}}},
		"clientUserMessageId":        uuid7(),
		"responsesapiClientMetadata": nil,
	}
	res, err := rpc.call(ctx, 1, "thread/queue/add", params)
	if err != nil {
		return "", err
	}
	var out struct {
		QueuedSubmission struct {
			ID string `json:"id"`
		} `json:"queuedSubmission"`
	}
	if err := json.Unmarshal(res, &out); err != nil || out.QueuedSubmission.ID == "" {
		return "", fmt.Errorf("%w: an answer without a queued submission: %.200s", ErrRefused, res)
	}
	return out.QueuedSubmission.ID, nil
}

// Withdraw takes out of threadID's queue the submissions whose text holds mark (still
// waiting: the agent has not taken them into a turn) and reports whether it took any.
// false with a nil error: none waits there (taken, or never queued). The thread must be
// one working in cwd, as for Queue.
func (c Codex) Withdraw(ctx context.Context, threadID, cwd, mark string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	rpc, err := c.open(ctx)
	if err != nil {
		return false, err
	}
	defer rpc.close()
	if err := rpc.threadIn(ctx, threadID, cwd); err != nil {
		return false, err
	}
	res, err := rpc.call(ctx, 1, "thread/queue/list", map[string]any{"threadId": threadID})
	if err != nil {
		return false, err
	}
	var list struct {
		Data []struct {
			ID    string `json:"id"`
			Input []struct {
				Text string `json:"text"`
			} `json:"input"`
		} `json:"data"`
	}
	if err := json.Unmarshal(res, &list); err != nil {
		return false, fmt.Errorf("%w: thread/queue/list: %v", ErrRefused, err)
	}
	took := false
	for i, q := range list.Data {
		for _, in := range q.Input {
			if !strings.Contains(in.Text, mark) {
				continue
			}
			if _, err := rpc.call(ctx, 2+i, "thread/queue/delete", map[string]any{"threadId": threadID, "queuedSubmissionId": q.ID}); err != nil {
				return took, err
			}
			took = true
			break
		}
	}
	return took, nil
}

// threadIn checks that thread threadID works in directory cwd (thread/read: the
// thread's cwd, symlinks resolved on both sides): ErrNotThisThread otherwise, or
// ErrRefused when the CLI does not say.
func (r *rpcConn) threadIn(ctx context.Context, threadID, cwd string) error {
	res, err := r.call(ctx, "read", "thread/read", map[string]any{"threadId": threadID})
	if err != nil {
		return err
	}
	var out struct {
		Thread struct {
			ID  string `json:"id"`
			Cwd string `json:"cwd"`
		} `json:"thread"`
	}
	if err := json.Unmarshal(res, &out); err != nil || out.Thread.Cwd == "" {
		return fmt.Errorf("%w: thread/read without the thread's directory: %.200s", ErrRefused, res)
	}
	if (out.Thread.ID != "" && out.Thread.ID != threadID) || !samePath(out.Thread.Cwd, cwd) {
		return fmt.Errorf("%w: thread %s works in %q, not in %q", ErrNotThisThread, threadID, out.Thread.Cwd, cwd)
	}
	return nil
}

// samePath reports whether a and b name one directory (cleaned, or symlinks resolved).
func samePath(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	return err1 == nil && err2 == nil && ra == rb
}

// open connects to the control socket and makes the JSON-RPC handshake. ErrUnavailable
// when the socket is missing, is not a socket owned by this user, or does not answer.
func (c Codex) open(ctx context.Context) (*rpcConn, error) {
	sock := c.Socket()
	real, err := ownSocket(sock)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	checked(real)
	conn, err := dial(ctx, real) // the path checked, not the link: it may point elsewhere now
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrUnavailable, sock, err)
	}
	conn.SetReadLimit(16 << 20)
	rpc := &rpcConn{c: conn}
	init := map[string]any{
		"clientInfo":   map[string]any{"name": "nudge", "title": nil, "version": c.Version},
		"capabilities": map[string]any{"requiredHumanApproval": true, "experimentalApi": true, "requestAttestation": false, "optOutNotificationMethods": nil},
	}
	if _, err := rpc.call(ctx, "initialize", "initialize", init); err != nil {
		conn.CloseNow()
		return nil, fmt.Errorf("%w: initialize: %v", ErrUnavailable, err)
	}
	if err := rpc.send(ctx, map[string]any{"method": "initialized"}); err != nil {
		conn.CloseNow()
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return rpc, nil
}

// ownSocket checks that path is, or links to (Codex links it from a short directory of
// its own, /tmp/codex-daemon-UID, for the length limit of socket paths), a unix socket
// owned by this process's user in a directory only this user can write to, that no one
// else can write to through it either: not something another user planted where the
// CLI's socket should be. It returns the socket's path, symlinks resolved: the path to
// dial (a link may be flipped after the check).
func ownSocket(path string) (string, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", err
	}
	fi, err := os.Lstat(real)
	if err != nil {
		return "", err
	}
	if fi.Mode()&os.ModeSocket == 0 {
		return "", fmt.Errorf("%s is not a socket", real)
	}
	if err := mine(fi, real); err != nil {
		return "", err
	}
	dir, err := os.Stat(filepath.Dir(real))
	if err != nil {
		return "", err
	}
	if dir.Mode().Perm()&0o022 != 0 && dir.Mode()&os.ModeSticky == 0 {
		return "", fmt.Errorf("%s is writable by others", filepath.Dir(real))
	}
	if err := mine(dir, filepath.Dir(real)); err != nil {
		return "", err
	}
	// A socket others may write to (connect), in a directory that lets them reach it.
	if p, d := fi.Mode().Perm(), dir.Mode().Perm(); p&0o020 != 0 && d&0o010 != 0 || p&0o002 != 0 && d&0o001 != 0 {
		return "", fmt.Errorf("%s is writable by others", real)
	}
	return real, nil
}

// checked is called between the check of the socket and its dial (tests flip a link there).
var checked = func(string) {}

// mine fails unless fi (of path) belongs to this process's user.
func mine(fi os.FileInfo, path string) error {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%s belongs to uid %d, not to this user", path, st.Uid)
	}
	return nil
}

// dial opens the WebSocket of the control socket (GET /rpc over the unix socket), whose
// listener must run as this user (its peer credentials).
func dial(ctx context.Context, sock string) (*websocket.Conn, error) {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			c, err := d.DialContext(ctx, "unix", sock)
			if err != nil {
				return nil, err
			}
			if err := peerIsMe(c); err != nil {
				c.Close()
				return nil, err
			}
			return c, nil
		},
		Proxy: nil, // never through a proxy from the environment
	}
	defer tr.CloseIdleConnections()
	conn, _, err := websocket.Dial(ctx, "ws://localhost/rpc", &websocket.DialOptions{
		HTTPClient:      &http.Client{Transport: tr},
		CompressionMode: websocket.CompressionDisabled,
	})
	return conn, err
}

// rpcConn is JSON-RPC over one WebSocket: a request, then reads until its answer
// (notifications the server sends meanwhile are skipped).
type rpcConn struct{ c *websocket.Conn }

func (r *rpcConn) close() { r.c.Close(websocket.StatusNormalClosure, "") }

func (r *rpcConn) send(ctx context.Context, msg any) error {
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	return r.c.Write(ctx, websocket.MessageText, b)
}

func (r *rpcConn) call(ctx context.Context, id any, method string, params any) (json.RawMessage, error) {
	if err := r.send(ctx, map[string]any{"id": id, "method": method, "params": params}); err != nil {
		return nil, err
	}
	want, _ := json.Marshal(id)
	for {
		_, b, err := r.c.Read(ctx)
		if err != nil {
			return nil, err
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(b, &m) != nil || string(m.ID) != string(want) {
			continue
		}
		if m.Error != nil {
			return nil, fmt.Errorf("%w: %s: %s (%d)", ErrRefused, method, m.Error.Message, m.Error.Code)
		}
		return m.Result, nil
	}
}

// uuid7 is a version 7 UUID (time-ordered), the form the CLI uses for its own ids.
func uuid7() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	ms := uint64(time.Now().UnixMilli())
	for i := 0; i < 6; i++ {
		b[i] = byte(ms >> (40 - 8*i))
	}
	b[6] = b[6]&0x0f | 0x70
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
